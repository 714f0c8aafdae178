package replay

import "github.com/pconform/pconform/traces"

// These predicates read a protocol step's profile and outcome arguments, so that an adapter
// needs none of the trace format's vocabulary (traces.ProfileLeaseless, traces.OutcomeOK, ...)
// to drive its consumer and publisher.

// Leaseless reports whether a consumer step runs on the leaseless path (profile leaseless); a
// consumer step that is not leaseless is leased.
func (a Args) Leaseless() bool { return a.Profile == traces.ProfileLeaseless }

// Split reports whether a publisher_deliver runs split in two transactions (profile split); a
// delivery that is not split is folded into one.
func (a Args) Split() bool { return a.Profile == traces.ProfileSplit }

// Succeeds reports whether a consumer_handle's handler succeeds (outcome ok).
func (a Args) Succeeds() bool { return a.Outcome == traces.OutcomeOK }

// Retries reports whether a failed consumer_handle's retry policy asks for a retry: it does for
// outcome fail and declines for fail_no_retry.
func (a Args) Retries() bool { return a.Outcome != traces.OutcomeFailNoRetry }
