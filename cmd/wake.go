package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/pkg/lock"
)

// notWoken says, as a warning, that a release (or a fix) was made but the
// server refused to publish its wake-up, and what to grant; it reports
// whether err was such a refusal, which the caller then treats as success.
func notWoken(f *Factory, what string, err error) bool {
	var we *lock.WakeError
	if !errors.As(err, &we) {
		return false
	}
	if we.Command != "" {
		// Picking the waiter was refused: everyone was woken instead,
		// unless the release channel was refused too.
		woken := "every waiting process was woken instead"
		if we.Channel != "" {
			woken = fmt.Sprintf("nor could it publish on %s; waiters find it free at their next poll instead of at once", we.Channel)
		}
		f.IO.Log(ui.Entry{Level: ui.LevelWarn, Fields: ui.Fields("command", we.Command, "channel", we.Channel),
			Text: fmt.Sprintf("warning: %s, but the server refused %s, which picks the waiter to wake (%s); %s",
				what, we.Command, strings.TrimSpace(we.Reason), woken),
			Hints: []string{fmt.Sprintf("grant the Redis user the command: ACL SETUSER <user> +%s (`lockctl doctor` checks)", strings.ToLower(we.Command))}})
		return true
	}
	f.IO.Log(ui.Entry{Level: ui.LevelWarn, Fields: ui.Fields("channel", we.Channel),
		Text: fmt.Sprintf("warning: %s, but the server refused to publish the wake-up on %s (%s); waiters find it free at their next poll instead of at once",
			what, we.Channel, strings.TrimSpace(we.Reason)),
		Hints: []string{fmt.Sprintf("grant the Redis user the channel and the command: ACL SETUSER <user> %s +publish (`lockctl doctor` checks)", channelRule(we.Channel))}})
	return true
}

// channelRule is the ACL channel pattern that covers channel.
func channelRule(channel string) string {
	if i := strings.IndexByte(channel, ':'); i > 0 {
		return "&" + channel[:i+1] + "*"
	}
	return "&" + channel
}
