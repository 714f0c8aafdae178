/*****************************************************************************************************
 * Test cases. Green tests (every name not ending in "Counterexample") must show no bug; each
 * counterexample test must find its bug. No test name is a prefix of another (`p check -tc` matches
 * by prefix).
 *****************************************************************************************************/

module Delivery = { Store, ConsumerWorker, BatchWorker, Publisher };
module Environment = { Scenario, Crasher, RawClient, RawNacker, Taker, DeadLetterClient, Janitor, DedupClient,
                       CheckpointClient, Redriver };

machine TestLeasedWorkers { start state Init { entry { new Scenario(ScLeasedWorkers()); } } }
machine TestWorkerStop { start state Init { entry { new Scenario(ScWorkerStop()); } } }
machine TestFetchAfterStop { start state Init { entry { new Scenario(ScFetchAfterStop()); } } }
machine TestLeaselessWorker { start state Init { entry { new Scenario(ScLeaselessWorker()); } } }
machine TestPriorityKeyedFifo { start state Init { entry { new Scenario(ScPriorityKeyedFifo()); } } }
machine TestOutboxFold { start state Init { entry { new Scenario(ScOutboxFold()); } } }
machine TestOutboxSplitCorrect { start state Init { entry { new Scenario(ScOutboxSplitCorrect()); } } }
machine TestOutboxIdCollision { start state Init { entry { new Scenario(ScOutboxIdCollision()); } } }
machine TestCrashRestart { start state Init { entry { new Scenario(ScCrashRestart()); } } }
machine TestPipeline { start state Init { entry { new Scenario(ScPipeline()); } } }
machine TestRawStoreOps { start state Init { entry { new Scenario(ScRawStoreOps()); } } }
machine TestStaleLeases { start state Init { entry { new Scenario(ScStaleLeases()); } } }
machine TestSplitWrite { start state Init { entry { new Scenario(ScSplitWrite()); } } }
machine TestRawAttempts { start state Init { entry { new Scenario(ScRawAttempts()); } } }
machine TestUnfencedAck { start state Init { entry { new Scenario(ScUnfencedAck()); } } }
machine TestFifoOvertake { start state Init { entry { new Scenario(ScFifoOvertake()); } } }
machine TestEffectOutsideFold { start state Init { entry { new Scenario(ScEffectOutsideFold()); } } }
machine TestLeaselessNackRace { start state Init { entry { new Scenario(ScLeaselessNackRace()); } } }
machine TestPolicyDeclines { start state Init { entry { new Scenario(ScPolicyDeclines()); } } }
machine TestEarlyDeadLetterUnfenced { start state Init { entry { new Scenario(ScEarlyDeadLetterUnfenced()); } } }
machine TestExhaustedDeadLetterUnfenced { start state Init { entry { new Scenario(ScExhaustedDeadLetterUnfenced()); } } }
machine TestFetchedAttempts { start state Init { entry { new Scenario(ScLeaselessFetchedAttempts()); } } }
machine TestOutboxDeadLetters { start state Init { entry { new Scenario(ScOutboxDeadLetters()); } } }
machine TestOutboxUnbounded { start state Init { entry { new Scenario(ScOutboxUnbounded()); } } }
machine TestRetention { start state Init { entry { new Scenario(ScRetention()); } } }
machine TestDedupLive { start state Init { entry { new Scenario(ScDedup(false)); } } }
machine TestDedupExpired { start state Init { entry { new Scenario(ScDedup(true)); } } }
machine TestDedupTTLInverted { start state Init { entry { new Scenario(ScDedupTTLInverted()); } } }
machine TestCheckpoints { start state Init { entry { new Scenario(ScCheckpoints()); } } }
machine TestCheckpointReset { start state Init { entry { new Scenario(ScCheckpointReset()); } } }
machine TestRedrive { start state Init { entry { new Scenario(ScRedrive()); } } }
machine TestPurgeForgetsIds { start state Init { entry { new Scenario(ScPurgeForgetsIds()); } } }
machine TestRedriveKeepsAttempts { start state Init { entry { new Scenario(ScRedriveKeepsAttempts()); } } }
machine TestRedriveRecordsReset { start state Init { entry { new Scenario(ScRedriveRecordsReset()); } } }
machine TestBatchLeasedWorkers { start state Init { entry { new Scenario(ScBatchLeasedWorkers()); } } }
machine TestBatchLeaselessWorker { start state Init { entry { new Scenario(ScBatchLeaselessWorker()); } } }
machine TestBatchAckBeforeEffects { start state Init { entry { new Scenario(ScBatchAckBeforeEffects()); } } }
machine TestBatchAcksFailed { start state Init { entry { new Scenario(ScBatchAcksFailed()); } } }
machine TestBatchPublisherFold { start state Init { entry { new Scenario(ScBatchPublisherFold()); } } }
machine TestBatchSkipsKeyHead { start state Init { entry { new Scenario(ScBatchSkipsKeyHead()); } } }

// ---- green ----

test tcLeasedWorkers [main = TestLeasedWorkers]:
  assert EffectAppliedAtMostOnce, AttemptsNeverExceedMax, EveryMessageEventuallyResolved, SameKeyClaimsRespectLiveHead,
         DeadLetterSparesLiveLeases, WakeFollowsCommit
  in (union Delivery, Environment, { TestLeasedWorkers });

test tcWorkerStop [main = TestWorkerStop]:
  assert StoppedWorkerStartsNoFetch, EffectAppliedAtMostOnce, AttemptsNeverExceedMax, EveryMessageEventuallyResolved
  in (union Delivery, Environment, { TestWorkerStop });

test tcLeaselessWorker [main = TestLeaselessWorker]:
  assert EffectAppliedAtMostOnce, AttemptsNeverExceedMax, EveryMessageEventuallyResolved
  in (union Delivery, Environment, { TestLeaselessWorker });

test tcPriorityKeyedFifo [main = TestPriorityKeyedFifo]:
  assert SameKeyClaimsRespectLiveHead, EffectAppliedAtMostOnce, AttemptsNeverExceedMax, EveryMessageEventuallyResolved
  in (union Delivery, Environment, { TestPriorityKeyedFifo });

test tcOutboxFold [main = TestOutboxFold]:
  assert OutboxCompletionImpliesDelivery, OutboxTargetDeliveredAtMostOnce, AttemptsNeverExceedMax,
         OutboxDeliveryBounded, EveryOutboxRowEventuallyFinal, WakeFollowsCommit
  in (union Delivery, Environment, { TestOutboxFold });

test tcOutboxSplitCorrect [main = TestOutboxSplitCorrect]:
  assert OutboxCompletionImpliesDelivery, OutboxTargetDeliveredAtMostOnce, AttemptsNeverExceedMax,
         OutboxDeliveryBounded, EveryOutboxRowEventuallyFinal
  in (union Delivery, Environment, { TestOutboxSplitCorrect });

// An outbox row whose id is a message of another mailbox is dead-lettered, not completed; one whose
// id is already in its own target is completed as a duplicate. The audit message is consumed, so
// the message liveness monitor does not apply to the rest (nothing consumes inbox).
test tcOutboxIdCollision [main = TestOutboxIdCollision]:
  assert OutboxCompletionImpliesDelivery, OutboxTargetDeliveredAtMostOnce, AttemptsNeverExceedMax,
         OutboxDeliveryBounded, EveryOutboxRowEventuallyFinal, EffectAppliedAtMostOnce
  in (union Delivery, Environment, { TestOutboxIdCollision });

test tcCrashRestart [main = TestCrashRestart]:
  assert EffectAppliedAtMostOnce, AttemptsNeverExceedMax, EveryMessageEventuallyResolved, SameKeyClaimsRespectLiveHead
  in (union Delivery, Environment, { TestCrashRestart });

test tcPipeline [main = TestPipeline]:
  assert OutboxCompletionImpliesDelivery, OutboxTargetDeliveredAtMostOnce, EffectAppliedAtMostOnce,
         AttemptsNeverExceedMax, EveryMessageEventuallyResolved, OutboxDeliveryBounded, EveryOutboxRowEventuallyFinal
  in (union Delivery, Environment, { TestPipeline });

test tcLeaselessNackRace [main = TestLeaselessNackRace]:
  assert EffectAppliedAtMostOnce, AttemptsNeverExceedMax, EveryMessageEventuallyResolved
  in (union Delivery, Environment, { TestLeaselessNackRace });

test tcPolicyDeclines [main = TestPolicyDeclines]:
  assert EffectAppliedAtMostOnce, AttemptsNeverExceedMax, EveryMessageEventuallyResolved, DeadLetterSparesLiveLeases
  in (union Delivery, Environment, { TestPolicyDeclines });

// Raw outbox_complete completes a row without delivering it (that is the operation's contract), so
// OutboxCompletionImpliesDelivery does not apply here; nothing resolves messages, so neither does
// the liveness monitor.
test tcRawStoreOps [main = TestRawStoreOps]:
  assert AttemptsNeverExceedMax, SameKeyClaimsRespectLiveHead, OutboxTargetDeliveredAtMostOnce
  in (union Delivery, Environment, { TestRawStoreOps });

// Scripted stale tokens and lease boundaries on the raw store operations; as in tcRawStoreOps,
// nothing resolves every message, so the liveness monitor does not apply.
test tcStaleLeases [main = TestStaleLeases]:
  assert AttemptsNeverExceedMax, SameKeyClaimsRespectLiveHead
  in (union Delivery, Environment, { TestStaleLeases });

test tcOutboxDeadLetters [main = TestOutboxDeadLetters]:
  assert OutboxDeliveryBounded, EveryOutboxRowEventuallyFinal, OutboxCompletionImpliesDelivery,
         OutboxTargetDeliveredAtMostOnce, AttemptsNeverExceedMax
  in (union Delivery, Environment, { TestOutboxDeadLetters });

// Purges and re-enqueues race the consumer and the publisher. A re-enqueue after a horizon inserts
// the id afresh, so its handler may run twice and the outbox target may receive o1's id twice:
// EffectAppliedAtMostOnce and OutboxTargetDeliveredAtMostOnce do not apply.
test tcRetention [main = TestRetention]:
  assert PurgedIdsStayDuplicates, AttemptsNeverExceedMax, SameKeyClaimsRespectLiveHead
  in (union Delivery, Environment, { TestRetention });

// A redelivered message whose processed-message mark is still live is not applied again.
test tcDedupLiveMark [main = TestDedupLive]:
  assert DedupMarkHonoursTtl
  in (union Delivery, Environment, { TestDedupLive });

// A redelivered message whose mark expired is applied again, as documented.
test tcDedupExpiredMark [main = TestDedupExpired]:
  assert DedupMarkHonoursTtl
  in (union Delivery, Environment, { TestDedupExpired });

test tcCheckpoints [main = TestCheckpoints]:
  assert CheckpointVersionsOnlyGrow, EffectAppliedAtMostOnce, AttemptsNeverExceedMax, EveryMessageEventuallyResolved
  in (union Delivery, Environment, { TestCheckpoints });

// Redrives race the consumer and the publisher. A redriven row may come back after its worker or
// publisher stopped, so the liveness monitors do not apply; OutboxDeliveryBounded does not either
// (a redrive takes an outbox row out of its final state on purpose), nor does
// OutboxTargetDeliveredAtMostOnce (a redriven delivered message is inserted again).
test tcRedrive [main = TestRedrive]:
  assert RedrivenDeadLettersDeliverable, RedriveHistoryKept, AttemptsNeverExceedMax, EffectAppliedAtMostOnce,
         OutboxCompletionImpliesDelivery, SameKeyClaimsRespectLiveHead, WakeFollowsCommit
  in (union Delivery, Environment, { TestRedrive });

// ---- counterexamples ----

test tcDedupTTLInvertedCounterexample [main = TestDedupTTLInverted]:
  assert DedupMarkHonoursTtl
  in (union Delivery, Environment, { TestDedupTTLInverted });

test tcCheckpointResetCounterexample [main = TestCheckpointReset]:
  assert CheckpointVersionsOnlyGrow
  in (union Delivery, Environment, { TestCheckpointReset });

test tcPurgeForgetsIdsCounterexample [main = TestPurgeForgetsIds]:
  assert PurgedIdsStayDuplicates
  in (union Delivery, Environment, { TestPurgeForgetsIds });

test tcAttemptsKeptOnRedriveCounterexample [main = TestRedriveKeepsAttempts]:
  assert RedrivenDeadLettersDeliverable
  in (union Delivery, Environment, { TestRedriveKeepsAttempts });

test tcRecordTakesResetAttemptsCounterexample [main = TestRedriveRecordsReset]:
  assert RedriveHistoryKept
  in (union Delivery, Environment, { TestRedriveRecordsReset });

test tcOutboxSplitWriteCounterexample [main = TestSplitWrite]:
  assert OutboxCompletionImpliesDelivery
  in (union Delivery, Environment, { TestSplitWrite });

test tcLeaselessRawAttemptsCounterexample [main = TestRawAttempts]:
  assert EveryMessageEventuallyResolved, AttemptsNeverExceedMax
  in (union Delivery, Environment, { TestRawAttempts });

test tcLeaselessFetchedAttemptsCounterexample [main = TestFetchedAttempts]:
  assert EveryMessageEventuallyResolved, AttemptsNeverExceedMax
  in (union Delivery, Environment, { TestFetchedAttempts });

// A handler effect written outside the fold's transaction commits twice (a machine of the
// environment breaks the rule, not the store: internal/variants' effect-outside-fold is the Go
// model's consumer broken the same way).
test tcEffectOutsideFoldCounterexample [main = TestEffectOutsideFold]:
  assert EffectAppliedAtMostOnce
  in (union Delivery, Environment, { TestEffectOutsideFold });

test tcUnfencedAckCounterexample [main = TestUnfencedAck]:
  assert EffectAppliedAtMostOnce
  in (union Delivery, Environment, { TestUnfencedAck });

test tcFifoOvertakeCounterexample [main = TestFifoOvertake]:
  assert SameKeyClaimsRespectLiveHead
  in (union Delivery, Environment, { TestFifoOvertake });

test tcOutboxUnboundedCounterexample [main = TestOutboxUnbounded]:
  assert OutboxDeliveryBounded
  in (union Delivery, Environment, { TestOutboxUnbounded });

test tcEarlyDeadLetterUnfencedCounterexample [main = TestEarlyDeadLetterUnfenced]:
  assert DeadLetterSparesLiveLeases
  in (union Delivery, Environment, { TestEarlyDeadLetterUnfenced });

// The broken part is a worker of the model, not the store: no store variant reproduces it
// (internal/variants, ModelOnlyCounterexamples).
test tcFetchAfterStopCounterexample [main = TestFetchAfterStop]:
  assert StoppedWorkerStartsNoFetch
  in (union Delivery, Environment, { TestFetchAfterStop });

test tcExhaustedDeadLetterUnfencedCounterexample [main = TestExhaustedDeadLetterUnfenced]:
  assert DeadLetterSparesLiveLeases
  in (union Delivery, Environment, { TestExhaustedDeadLetterUnfenced });

// ---- batches (docs/semantics.md, "Batches") ----
// The trace format has no batch step yet: the bridge checks these test cases and keeps no trace of
// them (bridge.Untraced; the counterexamples are internal/variants'
// ModelOnlyCounterexamples).

test tcBatchLeasedWorkers [main = TestBatchLeasedWorkers]:
  assert EffectAppliedAtMostOnce, AttemptsNeverExceedMax, EveryMessageEventuallyResolved, SameKeyClaimsRespectLiveHead,
         DeadLetterSparesLiveLeases, AcknowledgedEffectCommitted
  in (union Delivery, Environment, { TestBatchLeasedWorkers });

test tcBatchLeaselessWorker [main = TestBatchLeaselessWorker]:
  assert EffectAppliedAtMostOnce, AttemptsNeverExceedMax, EveryMessageEventuallyResolved, SameKeyClaimsRespectLiveHead,
         AcknowledgedEffectCommitted
  in (union Delivery, Environment, { TestBatchLeaselessWorker });

test tcBatchPublisherFold [main = TestBatchPublisherFold]:
  assert OutboxCompletionImpliesDelivery, OutboxTargetDeliveredAtMostOnce, AttemptsNeverExceedMax,
         OutboxDeliveryBounded, EveryOutboxRowEventuallyFinal, WakeFollowsCommit
  in (union Delivery, Environment, { TestBatchPublisherFold });

test tcBatchAckBeforeEffectsCounterexample [main = TestBatchAckBeforeEffects]:
  assert AcknowledgedEffectCommitted
  in (union Delivery, Environment, { TestBatchAckBeforeEffects });

test tcBatchAcksFailedCounterexample [main = TestBatchAcksFailed]:
  assert AcknowledgedEffectCommitted
  in (union Delivery, Environment, { TestBatchAcksFailed });

test tcBatchSkipsKeyHeadCounterexample [main = TestBatchSkipsKeyHead]:
  assert SameKeyClaimsRespectLiveHead
  in (union Delivery, Environment, { TestBatchSkipsKeyHead });
