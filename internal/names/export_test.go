package names

// ShortForm is shortForm, for the external test package.
var ShortForm = shortForm
