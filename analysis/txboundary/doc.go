// Package txboundary defines an Analyzer that reports store calls inside a transaction's callback
// made with a context that does not carry the transaction.
//
// # Analyzer txboundary
//
// txboundary: report store calls that cross the transaction boundary
//
// An ExecTx callback, and a handler's Effects, receive a context that carries the store's
// transaction. A store call inside the callback made with another context (the outer ctx,
// context.Background()) does not join the transaction: on PostgreSQL it would commit on its own
// and survive the transaction's rollback, on SQLite it would wait for the writer connection the
// callback holds. The store refuses such a call at run time (actordelivery.ErrOutsideTransaction);
// this analyzer finds it in the source, before it runs.
//
// A callback is
//   - a function literal passed as the last argument of a method named ExecTx with the store's
//     transaction shape (context.Context, bool, func(context.Context) error) error, on any
//     receiver;
//   - a function literal of type actordelivery.Effects: returned where the result is Effects,
//     assigned or declared as Effects, or converted to it.
//
// Inside the callback's body (closures included, except those started with go, which run on
// another goroutine, and nested callbacks, which are checked on their own), a store call is a
// method of actordelivery.Store whose first parameter is a context.Context, or a nested ExecTx.
// Its context argument must derive from the callback's context parameter: the parameter itself,
// a call that takes a derived context as an argument (context.WithTimeout(ctx, d)), or a local
// variable assigned from such an expression. Anything else is reported, with a suggested fix
// that passes the callback's parameter instead.
//
// The analyzer never follows a context into another function: a helper that receives the outer
// context and calls the store is not reported (the run-time check still refuses it). A finding
// made on purpose is silenced with //pconform:ignore txboundary <reason>.
package txboundary
