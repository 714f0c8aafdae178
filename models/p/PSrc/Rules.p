/*****************************************************************************************************
 * Rules that depend on one row only (docs/semantics.md): lease and claim liveness, the blocking
 * predecessor rule, the delivery order, and the names profiles report in observations. The Store
 * machine applies them to its rows.
 *****************************************************************************************************/

fun NoResult(): tRes {
  return default(tRes);
}

// A lease is live iff the row has a token and lease_until > now (at lease_until == now it has expired;
// under the profile choice lease_at_until "live", it is still live then).
fun LeaseLive(m: tMsg, now: int): bool {
  return m.token != 0 && now < LeaseEnds(m.lease_until);
}

// A claim is live iff the row has a claim token and claim_until > now (the same boundary as a lease).
fun ClaimLive(r: tOutRow, now: int): bool {
  return r.token != 0 && now < LeaseEnds(r.claim_until);
}

// The first time at which a lease or claim that runs until `until` is no longer live.
fun LeaseEnds(until: int): int {
  if (PrfLeaseLiveAtUntil()) {
    return until + 1;
  }
  return until;
}

// Whether p, an earlier message of the same mailbox and key, keeps its successors from being
// eligible. Correct rule: p is ready and either still has attempts left or holds a live lease. The
// "fifo-overtake" variant has the bug the FIFO counterexample exhibits: a predecessor only blocks
// while it is itself available and unleased, so a leased or delayed head is overtaken.
fun BlocksSuccessor(p: tMsg, now: int, variant: string): bool {
  if (p.row_state != "ready") {
    return false;
  }
  if (variant == VariantFifoOvertake()) {
    return p.attempts < p.max_attempts && !LeaseLive(p, now) && p.available_at <= now;
  }
  // Under the profile choice exhausted_leased_head "passes", only attempts left block.
  return p.attempts < p.max_attempts || (LeaseLive(p, now) && !PrfExhaustedLeasedHeadPasses());
}

// Eligibility apart from the keyed-order rule (conditions 1-4 of Eligible in docs/semantics.md).
fun EligibleAlone(m: tMsg, now: int): bool {
  return m.row_state == "ready" && m.available_at <= now && !LeaseLive(m, now) && m.attempts < m.max_attempts;
}

// The delivery order among eligible messages: higher priority, then earlier available_at, then seq.
fun DeliversBefore(a: tMsg, b: tMsg): bool {
  if (a.priority != b.priority) {
    return a.priority > b.priority;
  }
  if (a.available_at != b.available_at) {
    return a.available_at < b.available_at;
  }
  return a.seqno < b.seqno;
}

// The store path a consumer profile takes, as its observations report it.
fun ConsumerPath(p: tConsumerProfile): string {
  if (p == Leased || p == UnfencedAck || p == EffectOutsideFold) {
    return "leased";
  }
  return "leaseless";
}

// The single-message consumer profile whose rules each message of a batch follows: every broken
// batch profile is on the leased path.
fun BatchConsumerProfile(p: tBatchProfile): tConsumerProfile {
  if (p == BatchLeaseless) {
    return Leaseless;
  }
  return Leased;
}

fun PublisherPath(p: tPublisherProfile): string {
  if (p == AtomicFold || p == AtomicFoldBatch) {
    return "fold";
  }
  return "split";
}

// The attempt count a consumer profile hands to its retry decision for a failed delivery, given the
// stored count it decides from, capped at max_attempts. Leased paths: the lease already counted the
// attempt. Leaseless (and LeaselessFetchedAttempts): nothing has counted it yet, so stored + 1.
// LeaselessRawAttempts: the bug, the stored count as is.
fun EffectiveAttempt(profile: tConsumerProfile, stored: int, max_attempts: int): int {
  var eff: int;
  eff = stored;
  if (profile == Leaseless || profile == LeaselessFetchedAttempts) {
    eff = stored + 1;
  }
  if (eff > max_attempts) {
    eff = max_attempts;
  }
  return eff;
}
