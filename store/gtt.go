package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// GTTs: each desk's in a hash of its own (gtts:<desk>, tag to the JSON
// PlacedGTT), and the desks that have any in a set (gttdesks). A GTT is
// recorded under its tag before it is sent (first caller wins, so one
// allowed call places at most one GTT), and every later change is a
// compare-and-set on the state and broker id it moves from, so a fire and
// a delete that race cannot both win.

var _ deskbot.GTTStore = (*Store)(nil)

// startGTTScript records a GTT unless its tag is recorded: then it
// returns the one recorded. KEYS: the desk's GTTs, the desks with GTTs.
// ARGV: tag, JSON, desk.
var startGTTScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  return cur
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
return false`)

// moveGTTScript records a GTT if it is still at the state and id it moves
// from. KEYS: the desk's GTTs. ARGV: tag, from state, from id, JSON.
// Returns {1, JSON} when moved, {0, the JSON as it stands} when not, false
// when the tag is not recorded.
var moveGTTScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then
  return false
end
local g = cjson.decode(cur)
local id = g['id']
if type(id) ~= 'string' then id = '' end
if g['state'] ~= ARGV[2] or id ~= ARGV[3] then
  return {0, cur}
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
return {1, ARGV[4]}`)

// StartGTT records g under its tag unless its desk has a GTT of that tag.
func (s *Store) StartGTT(ctx context.Context, g deskbot.PlacedGTT) (deskbot.PlacedGTT, bool, error) {
	if g.Tag == "" || deskbot.ValidDeskName(g.Desk) != nil {
		return g, false, deskbot.Errorf(deskbot.EINVALID, "A GTT needs a tag and a desk")
	}
	data, err := encode(g)
	if err != nil {
		return g, false, err
	}
	v, err := startGTTScript.Run(ctx, s.rdb, []string{s.gttsKey(g.Desk), s.gttDesksKey()}, g.Tag, data, g.Desk).Text()
	if err == redis.Nil {
		return g, false, nil
	} else if err != nil {
		return g, false, s.wrap(err)
	}
	got, err := decodeGTT(v)
	return got, true, err
}

// MoveGTT records g if its desk's GTT of g.Tag is still at from's state
// and id.
func (s *Store) MoveGTT(ctx context.Context, from, g deskbot.PlacedGTT) (deskbot.PlacedGTT, bool, error) {
	if from.Tag != g.Tag || from.Desk != g.Desk {
		return g, false, fmt.Errorf("store: a GTT moves under its own tag and desk")
	}
	data, err := encode(g)
	if err != nil {
		return g, false, err
	}
	v, err := moveGTTScript.Run(ctx, s.rdb, []string{s.gttsKey(g.Desk)}, g.Tag, string(from.State), from.ID, data).Slice()
	if err == redis.Nil {
		return g, false, deskbot.Errorf(deskbot.ENOTFOUND, "Desk %s has no GTT %s", g.Desk, g.Tag)
	} else if err != nil {
		return g, false, s.wrap(err)
	}
	moved, _ := v[0].(int64)
	text, _ := v[1].(string)
	got, err := decodeGTT(text)
	return got, moved == 1, err
}

// DeskGTTs is desk's GTTs, oldest first.
func (s *Store) DeskGTTs(ctx context.Context, desk string) ([]deskbot.PlacedGTT, error) {
	m, err := s.rdb.HGetAll(ctx, s.gttsKey(desk)).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	gs := make([]deskbot.PlacedGTT, 0, len(m))
	for _, v := range m {
		g, err := decodeGTT(v)
		if err != nil {
			return nil, err
		}
		gs = append(gs, g)
	}
	slices.SortFunc(gs, func(a, b deskbot.PlacedGTT) int { return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Tag, b.Tag)) })
	return gs, nil
}

// ActiveGTTs is every desk's active GTTs, by desk, oldest first.
func (s *Store) ActiveGTTs(ctx context.Context) ([]deskbot.PlacedGTT, error) {
	desks, err := s.rdb.SMembers(ctx, s.gttDesksKey()).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	slices.Sort(desks)
	var all []deskbot.PlacedGTT
	for _, d := range desks {
		gs, err := s.DeskGTTs(ctx, d)
		if err != nil {
			return nil, err
		}
		for _, g := range gs {
			if g.State == deskbot.GTTActive {
				all = append(all, g)
			}
		}
	}
	return all, nil
}

func decodeGTT(v string) (deskbot.PlacedGTT, error) {
	var g deskbot.PlacedGTT
	if err := json.Unmarshal([]byte(v), &g); err != nil {
		return g, fmt.Errorf("store: decode GTT: %w", err)
	}
	return g, nil
}
