// Package service is the worked example of docs/service.md: a small order service on the
// actordelivery store. PlaceOrder writes an order and the outbox row announcing it in one
// transaction; Serve runs the outbox publisher and a group of workers on the billing mailbox until
// its context ends, then drains. service_test.go runs it on SQLite with the store's recorder on
// and checks the recorded log with the same checker as `pconform check`.
//
// The package uses only actordelivery's exported API, as a user's module would.
package service
