package deskbot

import "regexp"

// deskNameRx is the one rule for a desk's name. A name appears in folder
// paths, Redis keys, callback data and commands, so it is short, lower case
// and free of separators; "all" is refused because it means every desk in
// /flatten, /pause and /resume.
var deskNameRx = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// AllDesks is the word commands use for every desk at once.
const AllDesks = "all"

// ValidDeskName returns EINVALID, in words a person can act on, when name
// cannot be a desk's name.
func ValidDeskName(name string) error {
	if !deskNameRx.MatchString(name) {
		return Errorf(EINVALID, "%q is not a valid desk name (1 to 32 of a-z, 0-9, _ and -)", name)
	}
	if name == AllDesks {
		return Errorf(EINVALID, "a desk may not be named %q: it means every desk in commands", AllDesks)
	}
	return nil
}

// SharedAccount says whether Telegram user id is one of the accounts Telegram
// sends other people's messages from, and which: anonymous group admins all
// post as GroupAnonymousBot, a message sent as a channel comes from
// Channel_Bot, channel forwards from 777000. Such an id names no one person,
// so it can never be an approver, and /whoami must not hand it to someone
// as theirs.
func SharedAccount(id int64) (string, bool) {
	why, ok := sharedAccounts[id]
	return why, ok
}

var sharedAccounts = map[int64]string{
	1087968824: "Telegram's account for anonymous group admins (GroupAnonymousBot)",
	136817688:  "Telegram's account for messages sent as a channel (Channel_Bot)",
	777000:     "Telegram's own service account (channel forwards, notices)",
}
