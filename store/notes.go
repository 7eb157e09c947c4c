package store

import (
	"context"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// PutNote sets key to value; ttl 0 keeps it until deleted.
func (s *Store) PutNote(ctx context.Context, key, value string, ttl time.Duration) error {
	return s.wrap(s.rdb.Set(ctx, s.noteKey(key), value, ttl).Err())
}

// PutNoteOnce sets key only if absent and reports whether it did, so that
// two processes handling the same update agree on which one goes ahead.
func (s *Store) PutNoteOnce(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.noteKey(key), value, ttl).Result()
	return ok, s.wrap(err)
}

// Note returns the value of key, ENOTFOUND when absent.
func (s *Store) Note(ctx context.Context, key string) (string, error) {
	v, err := s.rdb.Get(ctx, s.noteKey(key)).Result()
	if err == redis.Nil {
		return "", deskbot.Errorf(deskbot.ENOTFOUND, "No note %s", key)
	}
	return v, s.wrap(err)
}

// DeleteNote removes key; removing an absent key is not an error.
func (s *Store) DeleteNote(ctx context.Context, key string) error {
	return s.wrap(s.rdb.Del(ctx, s.noteKey(key)).Err())
}
