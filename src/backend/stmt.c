/*
 * stmt.c — what zk_lock does around each statement of a backend:
 *   - a statement cancelled because a lock was lost fails with that loss's
 *     40001, raised as the cancel unwinds the statement (not rewritten in a
 *     logging hook, which runs only when the error goes to the log);
 *   - each statement's end puts the commit check back at the head of the
 *     transaction callbacks (xact.c);
 *   - DISCARD ALL gives up session-level locks, as it does core's.
 */
#include "postgres.h"

#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"

#include "stmt.h"
#include "held.h"
#include "xact.h"

static ExecutorRun_hook_type prev_executor_run = NULL;
static ExecutorEnd_hook_type prev_executor_end = NULL;
static ProcessUtility_hook_type prev_process_utility = NULL;

typedef struct RunArgs
{
	QueryDesc  *queryDesc;
	ScanDirection direction;
	uint64		count;
	bool		execute_once;
} RunArgs;

typedef struct UtilityArgs
{
	PlannedStmt *pstmt;
	const char *queryString;
	bool		readOnlyTree;
	ProcessUtilityContext context;
	ParamListInfo params;
	QueryEnvironment *queryEnv;
	DestReceiver *dest;
	QueryCompletion *qc;
} UtilityArgs;

static void
run_executor(void *arg)
{
	RunArgs    *a = arg;

	if (prev_executor_run)
		prev_executor_run(a->queryDesc, a->direction, a->count, a->execute_once);
	else
		standard_ExecutorRun(a->queryDesc, a->direction, a->count, a->execute_once);
}

/*
 * Every level catches (a plain setjmp): the innermost converts the cancel,
 * so a PL/pgSQL handler for query_canceled does not swallow the loss.
 */
static void
executor_run(QueryDesc *queryDesc, ScanDirection direction, uint64 count, bool execute_once)
{
	RunArgs		a = {queryDesc, direction, count, execute_once};

	zb_run_explained(run_executor, &a);
}

static void
executor_end(QueryDesc *queryDesc)
{
	if (prev_executor_end)
		prev_executor_end(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
	zb_xact_check_first();
}

static void
run_utility(void *arg)
{
	UtilityArgs *a = arg;

	if (prev_process_utility)
		prev_process_utility(a->pstmt, a->queryString, a->readOnlyTree, a->context, a->params,
							 a->queryEnv, a->dest, a->qc);
	else
		standard_ProcessUtility(a->pstmt, a->queryString, a->readOnlyTree, a->context, a->params,
								a->queryEnv, a->dest, a->qc);
}

static void
process_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				ProcessUtilityContext context, ParamListInfo params,
				QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	UtilityArgs a = {pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc};
	Node	   *stmt = pstmt->utilityStmt;
	bool		discard_all = IsA(stmt, DiscardStmt) && ((DiscardStmt *) stmt)->target == DISCARD_ALL;

	zb_run_explained(run_utility, &a);
	if (discard_all)
		zb_discard_all();
	zb_xact_check_first();
}

void
zb_stmt_hooks_init(void)
{
	prev_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = executor_run;
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = executor_end;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = process_utility;
}
