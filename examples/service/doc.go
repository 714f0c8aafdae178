// Package service is the worked example of docs/service.md: a small order service on the
// actordelivery store. PlaceOrder writes an order and the outbox row announcing it in one
// transaction. Serve runs the outbox publisher and a group of billing workers until its context
// ends (on SIGTERM, say), then drains. Each worker charges the order through Config.Charge, outside
// any transaction, and writes its invoice row in the handler's Effects, which commit with the
// message's acknowledgement.
//
// service.go uses only actordelivery's exported API, as a user's module would; it is the part to
// copy. faults.go holds three bugs that a service's own code can have, which only the tests switch
// on (a field of Config that no other package can set).
//
// The tests run the service on SQLite and on PostgreSQL (PCONFORM_PG_DSN), with the store's
// recorder on, as two processes one after the other appending to one log, and check the log
// with the same checker as `pconform check --p`: the model oracle and the P oracle agree with
// every event. With each bug switched on, the checker finds it.
package service
