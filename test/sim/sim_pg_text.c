/*
 * sim_pg_text.c — the rest of what the shipped worker files take from
 * PostgreSQL, for the simulator: libpgport's string functions, and logging
 * (a LOG line goes to the seed's trace, an ERROR fails it).  Compiled with
 * PostgreSQL's server headers, as sim_pg.c.
 */
#include "postgres.h"

#include <stdarg.h>
#include <stdio.h>

#include "sim_host.h"

/* ---- strings (libpgport's, which the simulator does not link) ---- */

#undef vsnprintf

int
pg_vsnprintf(char *str, size_t count, const char *fmt, va_list args)
{
	return vsnprintf(str, count, fmt, args);
}

int
pg_snprintf(char *str, size_t count, const char *fmt,...)
{
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(str, count, fmt, ap);
	va_end(ap);
	return n;
}

size_t
strlcpy(char *dst, const char *src, size_t siz)
{
	size_t		n = strlen(src);

	if (siz > 0)
	{
		size_t		k = n < siz - 1 ? n : siz - 1;

		memcpy(dst, src, k);
		dst[k] = '\0';
	}
	return n;
}

/* ---- logging: a LOG line goes to the seed's trace, an ERROR fails it ---- */

static int	log_level;
static char log_line[512];

bool
errstart(int elevel, const char *domain)
{
	log_level = elevel;
	log_line[0] = '\0';
	return elevel >= LOG;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

static int
add_text(const char *prefix, const char *fmt, va_list ap)
{
	size_t		n = strlen(log_line);

	if (n < sizeof(log_line))
		n += snprintf(log_line + n, sizeof(log_line) - n, "%s", prefix);
	if (n < sizeof(log_line))
		vsnprintf(log_line + n, sizeof(log_line) - n, fmt, ap);
	return 0;
}

int
errmsg(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	add_text("", fmt, ap);
	va_end(ap);
	return 0;
}

/* the same text, not translated: one function under both names */
int			errmsg_internal(const char *fmt,...) __attribute__((alias("errmsg")));
int			errdetail_internal(const char *fmt,...) __attribute__((alias("errdetail")));

int
errdetail(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	add_text("; ", fmt, ap);
	va_end(ap);
	return 0;
}

int
errcode(int sqlerrcode)
{
	return 0;
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	simh_log(log_level >= ERROR, log_line);
	if (log_level >= ERROR)
		exit(1);				/* the worker process would exit: the seed has failed */
}
