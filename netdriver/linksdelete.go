package netdriver

// LinksDeleter is an optional interface of a [Driver]: it deletes several
// links in one kernel operation, which unregisters them together (one
// set of the kernel's waits for every link instead of one per link).
type LinksDeleter interface {
	// DeleteLinks deletes the links named names, as [Driver.DeleteLink]
	// would one after the other: a name with no link is skipped. It
	// deletes no other link.
	DeleteLinks(names ...string) error
}
