// Package deskfs owns the desks' folders on the host: where each desk's
// folder is (Dir), and the one safe way the service opens a file a desk
// controls (Open, ReadTail). A desk is hostile: it may plant a symlink to a
// host file, a FIFO that blocks its reader, or a device, so every read of
// its files goes through Open. Safe for concurrent use; it keeps no state.
package deskfs
