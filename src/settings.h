/*
 * settings.h — the zk_lock.* settings (settings.c).
 */
#ifndef ZK_LOCK_SETTINGS_H
#define ZK_LOCK_SETTINGS_H

extern char *zkl_hosts;
extern char *zkl_root;
extern char *zkl_auth;
extern int	zkl_session_timeout;
extern int	zkl_connect_timeout;
extern int	zkl_max_locks;
extern bool zkl_verify_on_commit;
extern int	zkl_proof_bound;
extern bool zkl_local_handover;
extern int	zkl_local_handover_limit;
extern int	zkl_linger;
extern int	zkl_lock_delay;
extern bool zkl_test_fail_worker;
extern bool zkl_test_orphan;
extern int	zkl_test_seal_delay_ms;

extern void zkl_define_settings(void);

#endif
