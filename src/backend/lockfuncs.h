/*
 * lockfuncs.h — the SQL functions' keys and entry points (lockfuncs.c).
 * Backends only.
 */
#ifndef ZK_LOCK_LOCKFUNCS_H
#define ZK_LOCK_LOCKFUNCS_H

#include "postgres.h"

#include "fmgr.h"

#include "keys.h"

/*
 * One C entry point per SQL signature: NAME_text and NAME_int8 call
 * IMPL(fcinfo, key kind, ARG) (a text or bigint key, or for the multi-key
 * functions a text[] or bigint[] of keys); ZKL_KEYED_ENTRIES adds
 * NAME_int4_int4, a (key1 int, key2 int) key.  A function's argument types
 * are never read from fn_expr, which a fast-path call (libpq's PQfn) does
 * not have.
 */
#define ZKL_TEXT_INT8_ENTRIES(name, impl, arg) \
PG_FUNCTION_INFO_V1(name##_text); \
PG_FUNCTION_INFO_V1(name##_int8); \
Datum name##_text(PG_FUNCTION_ARGS) { return impl(fcinfo, ZKL_KEY_TEXT, arg); } \
Datum name##_int8(PG_FUNCTION_ARGS) { return impl(fcinfo, ZKL_KEY_BIGINT, arg); }

#define ZKL_KEYED_ENTRIES(name, impl, arg) \
ZKL_TEXT_INT8_ENTRIES(name, impl, arg) \
PG_FUNCTION_INFO_V1(name##_int4_int4); \
Datum name##_int4_int4(PG_FUNCTION_ARGS) { return impl(fcinfo, ZKL_KEY_PAIR, arg); }

extern int	zb_key_nargs(char kind);
extern void zb_key_arg(FunctionCallInfo fcinfo, char kind, char *out);
extern void zb_check_usable(void);

#endif
