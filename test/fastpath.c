/*
 * fastpath.c — call one SQL function through libpq's fast-path interface
 * (PQfn), as some drivers do, for t/015.  A fast-path call has no parse tree,
 * so a C function that reads its argument types from fn_expr gets nothing.
 *
 *   fastpath CONNINFO 'zk_try_lock(bigint)' b:42 [t:text] [i:1000] ...
 *
 * Inside one transaction it calls the function and prints "result HEX" (the
 * binary result, empty for void) and how many zk_lock locks the session then
 * holds ("held N TYPE:KEY:MODE,..."), or "error SQLSTATE MESSAGE"; it ends the transaction and
 * prints "alive 1" once the connection answers again.  Exit 0 unless the
 * connection itself broke.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <libpq-fe.h>

#define MAXARGS 4

static PGconn *conn;

static char *
one_value(const char *sql)
{
	PGresult   *r = PQexec(conn, sql);
	static char buf[256];

	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
	{
		fprintf(stderr, "%s: %s", sql, PQerrorMessage(conn));
		exit(2);
	}
	snprintf(buf, sizeof(buf), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	return buf;
}

static void
command(const char *sql)
{
	PGresult   *r = PQexec(conn, sql);

	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		printf("%s: %s", sql, PQerrorMessage(conn));
	PQclear(r);
}

int
main(int argc, char **argv)
{
	PQArgBlock	args[MAXARGS];
	int64_t		bigs[MAXARGS];
	char		sql[512];
	unsigned char result[64];
	int			result_len = 0;
	int			fnoid;
	int			nargs = argc - 3;
	int			i;
	PGresult   *r;

	if (argc < 3 || nargs > MAXARGS)
	{
		fprintf(stderr, "usage: fastpath CONNINFO SIGNATURE [t:TEXT|b:INT8|i:INT4]...\n");
		return 2;
	}
	conn = PQconnectdb(argv[1]);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "%s", PQerrorMessage(conn));
		return 2;
	}
	snprintf(sql, sizeof(sql), "SELECT '%s'::regprocedure::oid", argv[2]);
	fnoid = atoi(one_value(sql));

	for (i = 0; i < nargs; i++)
	{
		const char *a = argv[3 + i];

		if (strncmp(a, "b:", 2) == 0)
		{
			/* binary int8: network byte order, high word first */
			uint64_t	v = (uint64_t) strtoll(a + 2, NULL, 10);
			uint32_t	hl[2] = {htonl((uint32_t) (v >> 32)), htonl((uint32_t) v)};

			memcpy(&bigs[i], hl, 8);
			args[i].len = 8;
			args[i].isint = 0;
			args[i].u.ptr = (int *) &bigs[i];
		}
		else if (strncmp(a, "i:", 2) == 0)
		{
			args[i].len = 4;
			args[i].isint = 1;
			args[i].u.integer = atoi(a + 2);
		}
		else if (strncmp(a, "t:", 2) == 0)
		{
			args[i].len = (int) strlen(a + 2);
			args[i].isint = 0;
			args[i].u.ptr = (int *) (a + 2);
		}
		else
		{
			fprintf(stderr, "bad argument %s\n", a);
			return 2;
		}
	}

	command("BEGIN");
	r = PQfn(conn, fnoid, (int *) result, &result_len, 0, args, nargs);
	if (PQresultStatus(r) == PGRES_COMMAND_OK)
	{
		printf("result ");
		for (i = 0; i < result_len && i < (int) sizeof(result); i++)
			printf("%02x", result[i]);
		printf("\nheld %s\n",
			   one_value("SELECT count(*) || ' ' || coalesce(string_agg(key_type || ':' || key || ':' || mode, ','), '') "
					 "FROM zk_locks WHERE pid = pg_backend_pid() AND state = 'granted'"));
	}
	else
		printf("error %s %s", PQresultErrorField(r, PG_DIAG_SQLSTATE) ?
			   PQresultErrorField(r, PG_DIAG_SQLSTATE) : "?", PQerrorMessage(conn));
	PQclear(r);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		printf("connection broken: %s", PQerrorMessage(conn));
		return 1;
	}
	command("COMMIT");
	printf("alive %s\n", one_value("SELECT 1"));
	PQfinish(conn);
	return 0;
}
