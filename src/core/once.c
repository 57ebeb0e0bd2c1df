/*
 * once.c — zk_once's rules (once.h): the grid of periods, which one a call
 * must do, and the job's record.
 *
 * A record is lines of words, as gwait_doc.c's documents (a reader skips a
 * line it does not know, so a later version may add some; one that changes
 * the meaning of these raises the version on the first line):
 *     zk_once 1
 *     period <us>
 *     anchor <us since the Unix epoch>
 *     first <us>                       the first period owed
 *     done <us>                        the latest period done (absent: none yet)
 *     skipped <count>
 *     by <sysid> <pid> <xid> <uuid> <cluster>   who did it
 *     at <us>                          when it committed, on its clock
 */
#include "once.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define US_PER_DAY	INT64_C(86400000000)

ZkoArgs
zc_once_check_args(size_t name_len, int32_t months, int32_t days, int64_t time_us, bool anchor_finite,
				   int64_t *period)
{
	int64_t		day_us;

	if (name_len == 0)
		return ZKO_NAME_EMPTY;
	if (name_len > ZKO_MAX_NAME_BYTES)
		return ZKO_NAME_TOO_LONG;
	if (months != 0)
		return ZKO_PERIOD_HAS_MONTHS;
	/* a day counts 24 hours: the grid must not move with daylight saving */
	if (__builtin_mul_overflow((int64_t) days, US_PER_DAY, &day_us) ||
		__builtin_add_overflow(day_us, time_us, period))
		return ZKO_PERIOD_TOO_LONG;
	if (*period <= 0)
		return ZKO_PERIOD_NOT_POSITIVE;
	if (!anchor_finite)
		return ZKO_ANCHOR_NOT_FINITE;
	return ZKO_ARGS_OK;
}

bool
zc_once_latest_due(int64_t now, int64_t period, int64_t anchor, int64_t *start)
{
	int64_t		since;
	int64_t		k;
	int64_t		off;

	if (period <= 0 || __builtin_sub_overflow(now, anchor, &since))
		return false;
	/* floor division: a `now` before the anchor is on the grid too */
	k = since / period;
	if (since % period != 0 && since < 0)
		k--;
	return !__builtin_mul_overflow(k, period, &off) && !__builtin_add_overflow(anchor, off, start);
}

ZkoVerdict
zc_once_decide(const ZkoRecord *rec, int64_t period, int64_t anchor, int64_t now, bool latest,
			   int64_t *start, int64_t *skipped)
{
	int64_t		due;
	int64_t		next;

	if (!zc_once_latest_due(now, period, anchor, &due))
		return ZKO_OUT_OF_RANGE;
	if (rec == NULL)
	{
		/* a new job: the period begun now is the first one owed */
		*start = due;
		*skipped = 0;
		return ZKO_DUE;
	}
	if (rec->period != period || rec->anchor != anchor)
		return ZKO_OTHER_PERIOD;
	*skipped = rec->skipped;
	if (!rec->has_done)
		next = rec->first;
	else if (__builtin_add_overflow(rec->done, period, &next))
		return ZKO_OUT_OF_RANGE;
	/* a clock behind the record finds nothing: a period is never done twice for it */
	if (next > due)
		return ZKO_NOT_DUE;
	*start = latest ? due : next;
	if (latest)
		*skipped += (due - next) / period;
	return ZKO_DUE;
}

void
zc_once_baseline(ZkoRecord *rec, int64_t period, int64_t anchor, int64_t first)
{
	memset(rec, 0, sizeof(*rec));
	rec->period = period;
	rec->anchor = anchor;
	rec->first = first;
}

bool
zc_once_sealed(const ZkoRecord *rec, int64_t start, int64_t skipped, const ZkoBy *by, ZkoRecord *out)
{
	if (start < rec->first || (rec->has_done && start <= rec->done) || skipped < rec->skipped)
		return false;
	*out = *rec;
	out->has_done = true;
	out->done = start;
	out->skipped = skipped;
	out->has_by = true;
	out->by = *by;
	return true;
}

/* A cluster's name as one word: blanks and controls as '_', none as "-". */
static void
cluster_word(const char *name, char *out)
{
	size_t		i;

	for (i = 0; name[i] != '\0' && i < ZKO_CLUSTER_LEN - 1; i++)
		out[i] = (unsigned char) name[i] <= ' ' ? '_' : name[i];
	out[i] = '\0';
	if (i == 0)
		strcpy(out, "-");
}

int
zc_once_format(const ZkoRecord *rec, char *out, size_t len)
{
	char		cluster[ZKO_CLUSTER_LEN];
	size_t		n;
	int			w;

	w = snprintf(out, len, "zk_once %d\nperiod %" PRId64 "\nanchor %" PRId64 "\nfirst %" PRId64 "\n",
				 ZKO_VERSION, rec->period, rec->anchor, rec->first);
	if (w < 0 || (size_t) w >= len)
		return -1;
	n = w;
	if (rec->has_done)
	{
		w = snprintf(out + n, len - n, "done %" PRId64 "\n", rec->done);
		if (w < 0 || (size_t) w >= len - n)
			return -1;
		n += w;
	}
	w = snprintf(out + n, len - n, "skipped %" PRId64 "\n", rec->skipped);
	if (w < 0 || (size_t) w >= len - n)
		return -1;
	n += w;
	if (rec->has_by)
	{
		cluster_word(rec->by.cluster, cluster);
		w = snprintf(out + n, len - n, "by %" PRIu64 " %d %" PRIu32 " %s %s\nat %" PRId64 "\n",
					 rec->by.sysid, rec->by.pid, rec->by.xid, rec->by.uuid[0] ? rec->by.uuid : "-",
					 cluster, rec->by.at);
		if (w < 0 || (size_t) w >= len - n)
			return -1;
		n += w;
	}
	return (int) n;
}

/* Whether t is anchor + k * period for some k. */
static bool
on_grid(int64_t t, int64_t period, int64_t anchor)
{
	int64_t		since;

	return !__builtin_sub_overflow(t, anchor, &since) && since % period == 0;
}

/* One line of a record (NUL-terminated); false if it breaks the format. */
static bool
parse_line(const char *line, ZkoRecord *rec, unsigned *seen)
{
	char		word[16];
	int			used = 0;

	if (sscanf(line, "%15s%n", word, &used) != 1)
		return true;			/* an empty line */
	line += used;
#define ONE(name, bit, field) \
	if (strcmp(word, name) == 0) \
	{ \
		*seen |= (bit); \
		return sscanf(line, " %" SCNd64 " %n", &(field), &used) == 1 && line[used] == '\0'; \
	}
	ONE("period", 1u, rec->period);
	ONE("anchor", 2u, rec->anchor);
	ONE("first", 4u, rec->first);
	ONE("done", 8u, rec->done);
	ONE("skipped", 16u, rec->skipped);
	ONE("at", 32u, rec->by.at);
#undef ONE
	if (strcmp(word, "by") == 0)
	{
		*seen |= 64u;
		return sscanf(line, " %" SCNu64 " %d %" SCNu32 " %36s %63s %n", &rec->by.sysid, &rec->by.pid,
					  &rec->by.xid, rec->by.uuid, rec->by.cluster, &used) == 5 && line[used] == '\0';
	}
	return true;				/* a later version's line */
}

ZkoParse
zc_once_parse(const char *data, size_t len, ZkoRecord *rec)
{
	char		buf[ZKO_RECORD_LEN * 2];
	char	   *line;
	char	   *next;
	unsigned	seen = 0;
	int			version;
	int			used = 0;

	memset(rec, 0, sizeof(*rec));
	if (len >= sizeof(buf) || memchr(data, '\0', len) != NULL)
		return ZKO_PARSE_BAD;
	memcpy(buf, data, len);
	buf[len] = '\0';
	if (sscanf(buf, "zk_once %d%n", &version, &used) != 1 || (buf[used] != '\n' && buf[used] != '\0'))
		return ZKO_PARSE_BAD;
	if (version > ZKO_VERSION)
		return ZKO_PARSE_LATER;
	if (version < 1)
		return ZKO_PARSE_BAD;
	for (line = buf + used; *line != '\0'; line = next)
	{
		char	   *nl = strchr(line, '\n');

		next = nl != NULL ? nl + 1 : line + strlen(line);
		if (nl != NULL)
			*nl = '\0';
		if (!parse_line(line, rec, &seen))
			return ZKO_PARSE_BAD;
	}
	rec->has_done = (seen & 8u) != 0;
	rec->has_by = (seen & 64u) != 0;
	/* what a seal or a baseline always writes, and the rules they keep */
	if ((seen & 7u) != 7u || rec->period <= 0 || rec->skipped < 0 ||
		!on_grid(rec->first, rec->period, rec->anchor) ||
		(rec->has_done && (rec->done < rec->first || !on_grid(rec->done, rec->period, rec->anchor))) ||
		(rec->has_by && !rec->has_done))
		return ZKO_PARSE_BAD;
	return ZKO_PARSE_OK;
}
