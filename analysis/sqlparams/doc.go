// Package sqlparams defines an Analyzer that reads the SQL text of the store's statements and
// checks it against the named parameters bound to it.
//
// # Analyzer sqlparams
//
// sqlparams: report SQL parameters that are bound but unused, used but unbound, and fenced
// statements that do not compare the token
//
// The store writes each statement once as a string constant with :name parameters, and binds
// them with sql.Named (directly, or through a helper such as named("id", id)). The driver
// ignores a named argument the SQL does not use, so a fenced statement whose `token = :token`
// comparison was edited away still "binds" the token and silently stops fencing. A statement
// site holds a constant SQL string together with its named arguments: a call to a method named
// Exec, Query, QueryRow or Prepare (with or without Context), a return statement with a []any
// literal, or any call or return that carries named arguments. A SQL constant handed to anything
// else (a map key, a cache) is not a site. At each site whose every argument's name is known:
//
//   - every bound name must occur as :name in the SQL text (quoted text and PostgreSQL's ::casts
//     are not parameters);
//   - every :name in the SQL text must be bound.
//
// Fencing: a method of a type named Store that takes a parameter named token is a fenced
// operation (Ack, Nack, ExtendLease, OutboxComplete, OutboxFail, and the lease check of a leased
// commit). Every statement site in it must compare a token column with the bound token in its
// WHERE clause (`token = :token`, `claim_token = :token`).
//
// Dialects: in a map literal of string constants keyed by a SQL constant (the PostgreSQL
// replacements of postgres_queries.go), each replacement must use exactly the parameters of the
// statement it replaces, since both are bound by the same Go code.
//
// A finding made on purpose is silenced with //pconform:ignore sqlparams <reason>.
package sqlparams
