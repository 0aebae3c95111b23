// Package safefile reads files that another party controls (mounted
// secrets and config maps, disk images) without blocking on them and
// without following links out of place, and holds the module's one
// atomic file writer ([Replace]: the cache's records, the hook's files,
// the cloud-init image).
//
// A FIFO, a socket or a device where a regular file is expected would
// block an ordinary open or read forever (a FIFO without writer) or read
// without end (/dev/zero): every function here stats first, opens with
// O_NONBLOCK (so that even a FIFO swapped in after the stat cannot block
// the open), checks the opened file again with fstat, and refuses what is
// not a regular file with [ErrNotRegular]. Reads are bounded by a
// size limit and check their context between chunks.
//
// Files inside a mounted directory are opened through [os.Root]: symbolic
// links are followed only while they stay inside the directory (the
// kubelet mounts each key of a secret as a link into its "..data"
// directory, so O_NOFOLLOW alone would refuse every real secret); a link
// that leads outside is refused.
package safefile
