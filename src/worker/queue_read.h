/*
 * queue_read.h — zk_lock_queue()'s live read of a key (queue_read.c).
 * Worker process only.
 */
#ifndef ZK_LOCK_QUEUE_READ_H
#define ZK_LOCK_QUEUE_READ_H

extern void zw_query_start(void);
extern void zw_query_restarted(void);
extern void zw_query_send(void);

#endif
