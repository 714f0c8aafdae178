module github.com/pconform/pconform/bench/peer

go 1.26.0

require (
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/pconform/pconform v0.0.0
	maragu.dev/goqite v0.4.0
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.13.0 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

// The store is this checkout; goqite is the source scripts/peer-bench.sh puts beside this file.
replace github.com/pconform/pconform => ../..

replace maragu.dev/goqite => ./goqite
