// The observation events of the bridge contract, one per trace op, each with a named-tuple payload
// whose field names are the trace's JSON names.

type tClaimedRow = (id: string, delivery_attempts: int, token: int);
type tMsgRow = (mailbox: string, id: string, key: string, priority: int, payload: string, row_state: string,
  attempts: int, max_attempts: int, available_at: int, token: int, lease_until: int);
type tOutboxRow = (id: string, target: string, key: string, priority: int, max_attempts: int, payload: string,
  row_state: string, delivery_attempts: int, available_at: int, token: int, claim_until: int, reason: string);
type tDeadRow = (mailbox: string, id: string, attempts: int, reason: string);

event eObsEnqueue: (at: int, mailbox: string, id: string, key: string, priority: int, max_attempts: int,
  delay: int, payload: string, duplicate: bool, bug: bool);
event eObsLease: (at: int, mailbox: string, lease_for: int, msg_id: string, msg_attempts: int, msg_token: int, bug: bool);
event eObsPeek: (at: int, mailbox: string, msg_id: string, msg_attempts: int, msg_token: int);
event eObsAck: (at: int, id: string, token: int, err: string);
event eObsOutboxEnqueue: (at: int, id: string, target: string, key: string, priority: int, max_attempts: int,
  payload: string, max_delivery_attempts: int, duplicate: bool, err: string);
event eObsOutboxClaim: (at: int, limit: int, claim_for: int, claimed: seq[tClaimedRow], bug: bool);
event eObsAdvanceClock: (at: int);
event eObsConsumerFetch: (at: int, worker: int, mailbox: string, profile: string, lease_for: int, msg_id: string,
  msg_attempts: int, msg_token: int, bug: bool);
event eObsConsumerHandle: (at: int, worker: int, mailbox: string, profile: string, outcome: string, retry_delay: int,
  fault: string, reason: string, action: string, attempt: int, bug: bool);
event eObsPublisherDeliver: (at: int, publisher: int, id: string, token: int, profile: string, fault: string,
  retry_delay: int, action: string, duplicate: bool, bug: bool);
event eObsFinal: (messages: seq[tMsgRow], outbox: seq[tOutboxRow], dead_letters: seq[tDeadRow],
  effects: map[string, seq[string]]);
