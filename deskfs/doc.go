// Package deskfs owns the desks' folders on the host: where each desk's
// folder is (Dir), the one safe way the service opens a file a desk
// controls (Open, ReadTail) and the one safe way it writes a file into a
// desk's folder (Create). A desk is hostile: it may plant a symlink to a
// host file, a FIFO that blocks its reader, or a device, so every read of
// its files goes through Open and every write through Create. Safe for
// concurrent use; it keeps no state.
package deskfs
