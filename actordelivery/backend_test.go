package actordelivery

import (
	"crypto/rand"
	"database/sql"
	"go/ast"
	"go/parser"
	"go/token"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
)

// The store's tests run on both backends. Each test function is written once and runs on SQLite
// under its own name; TestOnPostgres runs the backend-neutral ones again as its subtests, and every
// helper below picks the backend from the test's name (so no state is shared between tests). A
// test opens its database with testStore or testTarget, never with a file path of its own, unless
// it tests something only SQLite has (pragmas, file names, the busy timeout); those stay out of
// postgresTests, and TestPostgresTestsListed keeps the list complete.

// pgDSNEnv names the PostgreSQL server the tests use. scripts/check.sh starts a throwaway one and
// sets it; without it the PostgreSQL tests skip, except under CI=true, where they fail.
const pgDSNEnv = "PCONFORM_PG_DSN"

const onPostgres = "TestOnPostgres/"

// postgresTests are the tests TestOnPostgres runs again on PostgreSQL.
var postgresTests = map[string]func(*testing.T){
	"TestDurationsAboveMaxRefused":                     TestDurationsAboveMaxRefused,
	"TestRecorderEvents":                               TestRecorderEvents,
	"TestRecorderDedupAndCheckpoints":                  TestRecorderDedupAndCheckpoints,
	"TestCommitLog":                                    TestCommitLog,
	"TestRecorderLeaseLostStep":                        TestRecorderLeaseLostStep,
	"TestRecorderOffTouchesNothing":                    TestRecorderOffTouchesNothing,
	"TestByIDOperations":                               TestByIDOperations,
	"TestCheckpoints":                                  TestCheckpoints,
	"TestClosedStore":                                  TestClosedStore,
	"TestConsumerAcks":                                 TestConsumerAcks,
	"TestConsumerBadInput":                             TestConsumerBadInput,
	"TestConsumerFailuresUntilDeadLetter":              TestConsumerFailuresUntilDeadLetter,
	"TestConsumerExhaustedFailureAfterRedriveIsFenced": TestConsumerExhaustedFailureAfterRedriveIsFenced,
	"TestConsumerFetchExpiresLeases":                   TestConsumerFetchExpiresLeases,
	"TestConsumerIdleFetchCommitsNothing":              TestConsumerIdleFetchCommitsNothing,
	"TestConsumerDrainSkipsTheRead":                    TestConsumerDrainSkipsTheRead,
	"TestConsumerLeaseLostRollsBackHandler":            TestConsumerLeaseLostRollsBackHandler,
	"TestConsumerLeaselessAckNotFound":                 TestConsumerLeaselessAckNotFound,
	"TestConsumerPolicyDeclines":                       TestConsumerPolicyDeclines,
	"TestConsumerRunStopsOnClose":                      TestConsumerRunStopsOnClose,
	"TestConsumerRunWakesOnEnqueue":                    TestConsumerRunWakesOnEnqueue,
	"TestLeaselessDecidesFromTheStoredRow":             TestLeaselessDecidesFromTheStoredRow,
	"TestDeadLetter":                                   TestDeadLetter,
	"TestOutboxDeadLetters":                            TestOutboxDeadLetters,
	"TestPublisherDeadLetters":                         TestPublisherDeadLetters,
	"TestCrashLeaselessPeekedMessageSurvives":          TestCrashLeaselessPeekedMessageSurvives,
	"TestCrashLeasedMessageSurvivesItsLease":           TestCrashLeasedMessageSurvivesItsLease,
	"TestCrashMidFold":                                 TestCrashMidFold,
	"TestEligibility":                                  TestEligibility,
	"TestEnqueue":                                      TestEnqueue,
	"TestExecTx":                                       TestExecTx,
	"TestHandlersRunOutsideTheWriteLock":               TestHandlersRunOutsideTheWriteLock,
	"TestExpireLeases":                                 TestExpireLeases,
	"TestLeaseAndFencing":                              TestLeaseAndFencing,
	"TestListMessages":                                 TestListMessages,
	"TestMailboxBadInput":                              TestMailboxBadInput,
	"TestManualClock":                                  TestManualClock,
	"TestNotify":                                       TestNotify,
	"TestOpenFailedMigrationLeavesNothing":             TestOpenFailedMigrationLeavesNothing,
	"TestOpenRefusesNewerSchema":                       TestOpenRefusesNewerSchema,
	"TestStressVerdictCounts":                          TestStressVerdictCounts,
	"TestStressProcesses":                              TestStressProcesses,
	"TestTablePrefix":                                  TestTablePrefix,
	"TestOutboxBadInput":                               TestOutboxBadInput,
	"TestOutboxClaim":                                  TestOutboxClaim,
	"TestOutboxEnqueue":                                TestOutboxEnqueue,
	"TestPeekChangesNothing":                           TestPeekChangesNothing,
	"TestProcessed":                                    TestProcessed,
	"TestPublisherBadInput":                            TestPublisherBadInput,
	"TestPublisherClaimLost":                           TestPublisherClaimLost,
	"TestPublisherCommitFails":                         TestPublisherCommitFails,
	"TestPublisherDelivers":                            TestPublisherDelivers,
	"TestPublisherFoldDuplicate":                       TestPublisherFoldDuplicate,
	"TestPublisherRun":                                 TestPublisherRun,
	"TestPublisherSplitCrashBetween":                   TestPublisherSplitCrashBetween,
	"TestMetricsCounts":                                TestMetricsCounts,
	"TestQueueDepth":                                   TestQueueDepth,
	"TestMetricsNeverBlockACommit":                     TestMetricsNeverBlockACommit,
	"TestExpvarMetricsNeverBlock":                      TestExpvarMetricsNeverBlock,
	"TestLogRecordKeys":                                TestLogRecordKeys,
	"TestPurge":                                        TestPurge,
	"TestPurgeBadInput":                                TestPurgeBadInput,
	"TestPurgeAllResumes":                              TestPurgeAllResumes,
	"TestRedrive":                                      TestRedrive,
	"TestRedriveBadInput":                              TestRedriveBadInput,
	"TestSingleWriteOutsideTransactionCountsOneCommit": TestSingleWriteOutsideTransactionCountsOneCommit,
	"TestWorkersBadInput":                              TestWorkersBadInput,
	"TestWorkersDrain":                                 TestWorkersDrain,
	"TestWorkersDrainTimeout":                          TestWorkersDrainTimeout,
	"TestWorkersDrainTimeoutBadInput":                  TestWorkersDrainTimeoutBadInput,
	"TestWorkersServeEveryMailbox":                     TestWorkersServeEveryMailbox,
	"TestWorkersSIGTERM":                               TestWorkersSIGTERM,
}

// backendOf returns the backend t runs on: PostgreSQL under TestOnPostgres (and its own PG-only
// tests, named TestPostgres...), SQLite otherwise.
func backendOf(t testing.TB) Backend {
	if strings.HasPrefix(t.Name(), onPostgres) || strings.HasPrefix(t.Name(), "TestPostgres") {
		return BackendPostgres
	}
	return BackendSQLite
}

// pgDSN returns the PostgreSQL server's DSN, skipping t (failing it under CI=true) when none is
// configured.
func pgDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(pgDSNEnv)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set and CI=true: the PostgreSQL tests must run in CI (scripts/check.sh starts a server)", pgDSNEnv)
		}
		t.Skipf("%s is not set: skipping the PostgreSQL tests (scripts/check.sh starts a throwaway server; see README)", pgDSNEnv)
	}
	return dsn
}

// testTarget returns a fresh, empty database for t: a file in t's temp dir on SQLite; on
// PostgreSQL, a schema of its own (dropped when t ends) named in the DSN's search_path.
func testTarget(t testing.TB) string {
	t.Helper()
	if backendOf(t) == BackendSQLite {
		return filepath.Join(t.TempDir(), "store.db")
	}
	return pgSchema(t, pgDSN(t))
}

func pgSchema(t testing.TB, dsn string) string {
	t.Helper()
	schema := "t_" + strings.ToLower(rand.Text()[:12])
	admin := pgAdmin(t, dsn)
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		a, err := sql.Open("pgx", dsn)
		if err != nil {
			return
		}
		defer a.Close()
		if _, err := a.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(dsn, schema)
}

func pgAdmin(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("open %s: %v", pgDSNEnv, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// withSearchPath points dsn (a URL or key=value pairs) at schema.
func withSearchPath(dsn, schema string) string {
	if u, err := url.Parse(dsn); err == nil && strings.Contains(dsn, "://") {
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}

var _ = stdlib.GetDefaultDriver // registers the "pgx" database/sql driver for the helpers above

// TestOnPostgres runs every test of postgresTests on PostgreSQL.
func TestOnPostgres(t *testing.T) {
	pgDSN(t)
	names := make([]string, 0, len(postgresTests))
	for name := range postgresTests {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Run(name, postgresTests[name])
	}
}

// TestPostgresTestsListed checks that every test that opens its database through the backend
// helpers is in postgresTests, so a new test cannot silently run on SQLite only.
func TestPostgresTestsListed(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") || strings.HasPrefix(fd.Name.Name, "TestPostgres") || fd.Name.Name == "TestOnPostgres" {
				continue
			}
			uses := false
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if id, ok := c.Fun.(*ast.Ident); ok && (id.Name == "testStore" || id.Name == "testTarget") {
						uses = true
					}
				}
				return !uses
			})
			if _, listed := postgresTests[fd.Name.Name]; uses && !listed {
				t.Errorf("%s (%s) opens its store through testStore/testTarget but is not in postgresTests: add it, so it runs on PostgreSQL too", fd.Name.Name, f)
			}
		}
	}
}
