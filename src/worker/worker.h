/*
 * worker.h — the background worker's entry point (worker.c).
 */
#ifndef ZK_LOCK_WORKER_H
#define ZK_LOCK_WORKER_H

#include "postgres.h"

#include "fmgr.h"

extern PGDLLEXPORT void zw_worker_main(Datum arg);

#endif
