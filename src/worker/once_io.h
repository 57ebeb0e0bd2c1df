/*
 * once_io.h — zk_once's calls on a job's record (once_io.c).
 * Worker process only.
 */
#ifndef ZK_LOCK_ONCE_IO_H
#define ZK_LOCK_ONCE_IO_H

typedef struct ZwOnceIo ZwOnceIo;
extern ZwOnceIo *zw_once_io;
extern ZwOnceIo *zw_once_io_new(void);
extern void zw_once_start(void);
extern void zw_once_restarted(void);
extern void zw_once_send(void);

#endif
