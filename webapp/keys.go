package webapp

import "time"

// Every note key the page keeps (deskbot.Notes), named here and only here.
//
//	webapp:flatten:<token>    a flatten confirmation offered: "<desk>|<user id>"
//	webapp:flattened:<token>  that confirmation was acted on (once)

func flattenAskKey(token string) string  { return "webapp:flatten:" + token }
func flattenDoneKey(token string) string { return "webapp:flattened:" + token }

// flattenAskTTL is how long a flatten confirmation may be acted on.
const flattenAskTTL = 5 * time.Minute

// groupPrefix names a process's consumer group on the event stream.
const groupPrefix = "webapp:"
