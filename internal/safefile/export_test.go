package safefile

// Chunk is chunk, for the external test package.
const Chunk = chunk
