// Package rawattempts defines an Analyzer that reports a message's stored attempt count reaching
// a retry decision without passing through the effective-attempts helper.
//
// # Analyzer rawattempts
//
// rawattempts: report raw stored attempt counts used in retry decisions
//
// The store counts an attempt when it leases a message, so on the leased path the stored count
// is the current attempt; on the leaseless path nothing has bumped it yet and the current
// attempt is stored+1. actordelivery.EffectiveAttempts is the one place that knows this. Handing the raw count to the retry decision on the leaseless path
// strands a message: after MaxAttempts failures it is never eligible again and never
// dead-lettered. The analyzer asks that every retry decision go through the helper, so the
// path is always explicit, even on the leased path where raw and effective agree.
//
// Sources of a raw count are the Attempts field of actordelivery.Message (also reached through
// a Delivery's embedded Message) and any struct field marked //pconform:storedattempts.
//
// Sanitisers turn a raw count into an effective one: any call through a value of type
// func(int, actordelivery.Path) int (EffectiveAttempts, or a local or field holding it) and any function marked //pconform:effectiveattempts.
//
// Sinks are
//   - an argument of an integer parameter of a method named Retry (RetryPolicy.Retry and its
//     implementations) or of a function marked //pconform:retrydecision,
//   - a comparison (<, <=, >, >=, ==, !=) with an expression that reads a MaxAttempts field,
//     when it decides a retry: it is the condition of an if or a switch case (directly, under
//     !, && or ||, or through a local bool) whose branches call a delivery action (a function
//     or method whose name contains DeadLetter, Nack or Retry, case-insensitively, or a marked
//     retry decision). Comparisons in assertions and in eligibility checks are left alone.
//
// Flow is followed inside one function (with its closures), in source order, through local
// variables, arithmetic (m.Attempts+1 is still raw: it bypasses the helper and any hook that
// replaces it), integer conversions, and integer-valued calls that are given a raw count (min,
// max, a clamp): such a call is assumed to compute from it unless it is a sanitiser. An assignment of a clean value clears a
// variable only when it is made in the block that declares the variable; an assignment inside
// a nested branch cannot clear it, because the other branch may skip it.
//
// Exempt are the bodies of the helper and of anything with its shape or mark, and the methods
// of actordelivery.Store: inside the store the stored count is the truth (eligibility and lease
// expiry are defined on it). docs/analyzers.md lists the false negatives (flow through struct
// fields, other functions, closures called later) and the known false positives. A finding made
// on purpose is silenced with //pconform:ignore rawattempts <reason>.
package rawattempts
