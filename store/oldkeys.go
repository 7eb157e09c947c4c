package store

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Keys written before the hash tag were named "<prefix><name>" (for the
// default prefix "deskbot:audit", now "{deskbot}:audit"). At Open each one
// is renamed under the tag, which keeps its value, its time to live and a
// stream's consumer groups as they were. Only the store's own names (and
// the paper broker's, which lived under the same prefix) are looked for, so
// a deployment whose prefix merely starts with this one's is left alone.
//
// RENAMENX never overwrites: if the tagged key already exists (another
// instance of this version renamed it first) the old one is left for the
// operator, and Open goes on. An instance of the earlier version must not
// run alongside this one: it would go on writing the old names.
//
// On a Cluster there is nothing to rename: the earlier version could not
// run on one (its scripts spanned slots).
var (
	oldFixedKeys = []string{"audit", "events", "open", "openby", "running", "denials", "grants"}
	oldKeyGlobs  = []string{"req:*", "desk:*", "inbox:*", "calls:*", "history:*", "note:*", "broker:book:*", "broker:trades:*"}
)

// migrateKeyNames renames every key still under its untagged name and
// reports how many it renamed. It is safe to run again, and from several
// processes at once.
func (s *Store) migrateKeyNames(ctx context.Context) (int, error) {
	if _, cluster := s.rdb.(*redis.ClusterClient); cluster {
		return 0, nil
	}
	prefix := s.opts.Prefix
	var old []string
	for _, name := range oldFixedKeys {
		old = append(old, prefix+name)
	}
	for _, glob := range oldKeyGlobs {
		iter := s.rdb.Scan(ctx, 0, escapeGlob(prefix)+glob, 1000).Iterator()
		for iter.Next(ctx) {
			old = append(old, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return 0, s.wrap(err)
		}
	}
	cmds := make([]*redis.BoolCmd, len(old))
	s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range old {
			cmds[i] = p.RenameNX(ctx, k, s.base+strings.TrimPrefix(k, prefix))
		}
		return nil
	})
	n := 0
	for _, c := range cmds {
		switch err := c.Err(); {
		case err == nil && c.Val():
			n++
		case err != nil && !strings.Contains(err.Error(), "no such key"): // gone meanwhile: fine
			return n, s.wrap(err)
		}
	}
	return n, nil
}

// escapeGlob quotes the characters SCAN's MATCH treats as wildcards.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
