// Package script reads the command lines of the datadriven test scripts that replay and models
// share, so a command means the same thing in both.
//
// Every trace operation is a command of the same name. Its arguments are key=value pairs named
// as in the trace format (JSON names): the operation's required arguments must be given, its
// optional ones may be, any other is an error. at=<seconds> moves the logical time forward
// before the operation runs:
//
//	enqueue mailbox=a id=m1 max_attempts=3 key=k priority=1 delay=5 payload=x
//	lease mailbox=a lease_for=10 at=2
//	ack id=m1 token=1
//
// A value is one word, or a Go string literal that is unquoted: reason="a=b" gives a=b and
// mailbox="" the empty string. That is how tracefmt writes a string that would not read back as
// one word, so a line tracefmt renders reads back to the same arguments. A value cannot hold a
// space, since the line syntax ends a value there.
//
// [Snapshot] renders a snapshot as the "snapshot" command prints it. The harnesses add their own
// commands (replay's reopen, the model's reset) and decide what a token number means.
package script
