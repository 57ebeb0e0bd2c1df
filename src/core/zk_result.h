/*
 * zk_result.h — the ZooKeeper result codes the pure core reads, with the
 * values of ZooKeeper's protocol (enum ZOO_ERRORS of <zookeeper/zookeeper.h>),
 * so that src/core compiles with no header of that library.  A file that
 * includes the library's header gets its definitions instead; worker.c
 * checks at compile time that the two agree (ZKL_ZK_RESULTS).
 */
#ifndef ZK_LOCK_ZK_RESULT_H
#define ZK_LOCK_ZK_RESULT_H

#define ZKL_ZK_RESULTS(X) \
	X(ZOK, 0) \
	X(ZRUNTIMEINCONSISTENCY, -2) \
	X(ZCONNECTIONLOSS, -4) \
	X(ZMARSHALLINGERROR, -5) \
	X(ZOPERATIONTIMEOUT, -7) \
	X(ZINVALIDSTATE, -9) \
	X(ZNONODE, -101) \
	X(ZNOAUTH, -102) \
	X(ZBADVERSION, -103) \
	X(ZNODEEXISTS, -110) \
	X(ZNOTEMPTY, -111) \
	X(ZSESSIONEXPIRED, -112) \
	X(ZCLOSING, -116)

#ifndef ZOOKEEPER_H_
#define ZKL_ZK_RESULT_ENUM(name, value) name = value,
enum ZklZkResult
{
	ZKL_ZK_RESULTS(ZKL_ZK_RESULT_ENUM)
	ZKL_ZK_RESULTS_END
};
#endif

#endif
