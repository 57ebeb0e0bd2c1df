/*
 * sim_files.h — the simulator's functions, by the file that has them
 * (sim_world.h includes it).
 */
#ifndef SIM_FILES_H
#define SIM_FILES_H

/* sim.c */
uint64_t rnd(void);
int rnd_int(int n);
bool chance(int percent);
bool aside_chance(int percent);
uint64_t next_nonce(void);
void trace(const char *fmt,...) __attribute__((format(printf, 1, 2)));
void fail(const char *fmt,...) __attribute__((format(printf, 1, 2)));
const char * key_name(int k);
int key_index(const char *key);
void tick(int64_t us);
void model_log(const char *line);
void step(void);
bool all_done(void);
double true_ms(const Cluster *c, int ms);
int rate_margin(const Sim *sim);
int draw_rates(Sim *sim);
void draw_world(Sim *sim);
int64_t run_seed(uint64_t seed, int64_t max_steps);
double wall_seconds(void);
void sim_run_range(const SimRange *r, SimTotals *tot);
void sim_print_stats(void);

/* sim_legacy.c */
void legacy_draw(uint64_t seed);
bool legacy_upgrade_pause(void);
bool legacy_step(void);
bool legacy_settle(void);
bool legacy_done(void);

/* sim_jobs.c */
int sim_jobs(const SimRange *r, int jobs);

/* sim_env.c */
Out * out_new(Cluster *c, Purpose p, uint64_t tag);
bool out_take(Cluster *c, uint64_t id, Out *into);
void send_req(Cluster *c, ZkmReq *r);
int64_t c_mono(const Cluster *c);
int64_t c_wall(const Cluster *c);
int64_t env_mono(void *arg);
int64_t env_now(void *arg);
void env_new_uuid(void *arg, char out[ZKL_UUID_LEN + 1]);
void env_wake(void *arg, ZklSlot *s);
void env_interrupt(void *arg, ZklSlot *s);
void env_denied(void *arg, const ZklSlot *s);
bool env_grants_paused(void *arg, int64_t now, int64_t *until);
Cluster * enter(Cluster *c);
int64_t simh_mono(void);
int64_t simh_proof_read(int64_t *session);
void simh_new_uuid(char *out);
int simh_lock_delay_ms(void);
bool simh_has_handle(void);
int64_t simh_wall(void);
uint64_t simh_sysid(void);
void simh_log(bool error, const char *line);
bool simh_connected(void);
uint32_t path_keys(const char *path);
uint64_t watch_tag(const SimCall *call);
void watch_keep(Cluster *c, const Out *o);
bool watch_take(Cluster *c, const ZkmMsg *msg);
void watcher_call(Cluster *c, uint64_t wtag, int type, int state, const char *path);
void watchers_session_event(Cluster *c, int state);
bool simh_send(const ZkmReq *req, const SimCall *call);
void drop_outs(Cluster *c, bool died);
void env_suspect(void *arg, const ZklSlot *s, const char *name);
bool env_may_be_orphan(void *arg, const char *name);
void worker_memory(Cluster *c);
void env_ghost(void *arg, const ZklSlot *s);
void env_proof_note(void *arg, int64_t sent_at, int64_t session);
const char * env_rc_text(int rc);
int env_rc_sqlstate(int rc);
void env_warn(void *arg, const char *msg);

/* sim_once.c */
void once_draw(uint64_t seed);
bool plan_once(Backend *b);
void once_clock(Cluster *c, Backend *b);
void once_act(Cluster *c, Backend *b, const Act *a);
void once_step(Cluster *c, Backend *b);
bool once_committed(Cluster *c, Backend *b);
void once_end(Cluster *c, Backend *b);
void once_final(void);

/* sim_worker.c */
void proof_forget(Cluster *c);
void pres_path(char *out, int64_t id, uint64_t nonce, int kind);
void worker_start(Cluster *c);
void worker_read(Cluster *c, int at_least);
void stop_close(Cluster *c, StopEnd how);
void stop_turn(Cluster *c);
void worker_turn(Cluster *c);
void linger_try_due(Cluster *c, int k);
void plan_turn(Cluster *c);
void on_state(Cluster *c, const ZkmMsg *msg);

/* sim_fair.c */
bool leader_has(const Cluster *c, const ZklSlot *s, const char *name);
void told(Cluster *c, const ZklSlot *s, const char *waiter);
bool passes_node(const Cluster *c, const ZklSlot *s);
int waits_for(const ZkrChild *kids, int n, int i);
void told_by_listing(Cluster *c, uint64_t tag, const ZkrChild *kids, int n);
int made_by(const Cluster *c, const ZklSlot *s, ZkrChild *kids, int n, int64_t zxid);
void told_by_event(Cluster *c, const char *path, int64_t zxid);
void check_one_owner(const Cluster *c);
bool ahead_of(const char *a, const char *b);
int name_cluster(const char *name);
bool tells(const ZkmMsg *msg, void *arg);
void check_handover_truth(Cluster *c, const ZklSlot *s);
void check_local_fifo(Cluster *c, const ZklSlot *s);
void check_handover(Cluster *c, const ZklSlot *s);
const ZklSlot * listed_slot(const Cluster *c, const Out *o);
void on_reply(Cluster *c, const ZkmMsg *msg);
void on_event(Cluster *c, const ZkmMsg *msg);
bool handle_next(Cluster *c);
bool deliver(Cluster *c);

/* sim_xact.c */
int find_hold(Backend *b, int key, char mode);
int mode_index(char mode);
void check_book(Cluster *c, Backend *b);
void app_count_xact(Backend *b, int key, char mode, int delta);
int unacknowledged(Cluster *c, Backend *b);
bool tainted(const char *uuid);
void taint(const char *uuid);
void slot_uuid(const ZklSlot *s, char out[ZKL_UUID_LEN + 1]);
bool slot_tainted(const ZklSlot *s);
void end_span(Backend *b, const ZklSlot *s);
void check_semaphore_commit(const Span *sp);
void check_commit(Backend *b);
void check_span(Span *sp);
void add_history(const Span *sp);
const char * span_who(const Span *sp);
void * book_alloc(void *arg, size_t size);
void * book_grow(void *arg, void *p, size_t size);
void book_release(void *arg, void *p);
bool book_lost(void *arg, int slot);
void book_scope(void *arg, int slot, uint8_t scope);
bool book_node_before(void *arg, int a, int b);
void book_abandon(void *arg, const int *slots, int n);
void book_init(Cluster *c, Backend *b);
void abandon_group(Cluster *c, Backend *b);
void release_all(Cluster *c, Backend *b);
void end_xact(Cluster *c, Backend *b, const char *how);

/* sim_plan.c */
void add_pause(Backend *b);
void add_act(Backend *b, bool unlock, int key, char mode, int kind);
void add_session_act(Backend *b, bool unlock, int key, char mode, int kind);
bool plan_session(Backend *b, int k);
bool holds_session(const Backend *b);
void add_savepoint(Backend *b);
void plan_savepoints(Backend *b);
void do_savepoint(Cluster *c, Backend *b, const Act *a);
void plan_multi(Backend *b);
void plan_semaphore(Backend *b);
void plan_xact(Backend *b);
void plan_plain(Backend *b, int k, int pattern);

/* sim_backend.c */
void app_take(Cluster *c, Backend *b, const ZklSlot *s);
void app_release(Backend *b, int key, char mode, bool all, bool ran_under);
void told_of_session_loss(Cluster *c, Backend *b, const char *how);
bool refused_for_loss(Cluster *c, Backend *b);
bool acknowledge(Cluster *c, Backend *b, const Act *a);
void do_unlock(Cluster *c, Backend *b, const Act *a);
void apply_stacks(Cluster *c, Backend *b);
void next_act(Cluster *c, Backend *b);
void fill_span(Cluster *c, Backend *b, const ZklSlot *s, Span *sp);
void open_span(Cluster *c, Backend *b, const ZklSlot *s);
void take_grant(Cluster *c, Backend *b, int idx);
void count_linger_wait(Cluster *c, Backend *b, bool granted);
void wait_group_step(Cluster *c, Backend *b);
void wait_step(Cluster *c, Backend *b);
bool any_lost(Cluster *c, Backend *b);
ZklCommitVerdict commit_verdict(Cluster *c, Backend *b);
void add_session_spans(Backend *b);
void mark_committing(Cluster *c, Backend *b, bool on);
void commit_step(Cluster *c, Backend *b);
void publish(Cluster *c, Backend *b, ZklCommitVerdict v);
void settle(Cluster *c, Backend *b, ZklCommitVerdict v);
bool backend_step(Cluster *c, Backend *b);
bool backend_begins_now(Cluster *c);

/* sim_request.c */
void request_group(Cluster *c, Backend *b, const Act *a);
void request(Cluster *c, Backend *b, const Act *a);

/* sim_invariants.c */
bool node_owner(const char *name, int *ci, int *pid, int *slot);
bool ridden_by_other(const Cluster *c, const ZklSlot *o);
bool conflict(char a, char b);
void check_fifo(Cluster *c, const ZklSlot *s);
void check_semaphore_holders(const Holder *h, int nh);
int64_t leader_czxid(const Cluster *c, const ZklSlot *s);
void check_group(const Cluster *c, int idx);
void note_grants(Cluster *c);
void check_peek_out(const Cluster *c);
void check_tombstone_asked(Cluster *c, const ZkmReq *r);
void check_group_whole(Cluster *c, const ZkmReq *r);
bool beside_gone_held(const Cluster *c, int pid, int key);
void taint_beside_gone(const Cluster *c, const Backend *b);
void check_cutoff_early(const Cluster *c);
void check_lookup_missed(const Cluster *c, const ZklSlot *s);

/* sim_truth.c */
int backend_of_pid(const Cluster *c, int pid);
void truth_owners(const char *key, const char *name, TruthEntry *e);
bool truth_request(int ci, int bi, const ZklSlot *s, TruthReq *r);
bool upgrade_ahead(const Cluster *c, const ZkrChild *kids, int own, int i);
bool behind_writer(const ZkrChild *kids, int n, int own, int32_t s_seq, int i);
bool local_waiter(const Cluster *c, const char *name);
void truth_dump(const Truth *tr);
void truth_build(Truth *tr);

/* sim_gw.c */
int gw_victim_slot(const Cluster *c, const ZgwVictim *v);
bool gw_cycle_gave_up(const ZgwVictim *v, int64_t since);
bool gw_cycle_tainted(const ZgwVictim *v);
void gw_observe(Cluster *c, const ZkmReq *r);
bool simh_fail_deadlock(ZklCore *core, int pid, const char *node, const char *msg, const char *detail);

/* sim_oracles.c */
void check_circles(void);
void check_step(void);
void check_lost_told(void);
void note_gone_held(Cluster *c, const char *key_path, const ZkmMsg *msg);
void note_gone_lookup(Cluster *c, const char *path, const ZkmMsg *reply);
bool key_event(const ZkmMsg *msg, void *arg);
bool key_news(Cluster *c, const ZklSlot *s, const char *key_path);
void check_sole_blocker(Cluster *c);
void check_pair_upgrades(const Cluster *c);
void check_try_refusal(Cluster *c, const ZklSlot *s, const ZkrChild *kids, int n);

/* sim_liveness.c */
void check_liveness(Cluster *c);
void dump_cluster(const Cluster *c);
void check_end(void);
bool delete_by_uuid(Cluster *c, const ZklSlot *s);

/* sim_faults.c */
void cluster_init(Cluster *c, int id, int nb, int nslots);
FaultKind pick_fault(void);
void worker_restart(Cluster *c);
void backend_exit(Cluster *c, Backend *b);
void crash_restart(Cluster *c);
void begin_stop(Cluster *c);
void fault(void);
void heal(bool all);
void pause_worker(Cluster *c, int64_t until);

/* sim_aims.c */
bool gap_aimed(void);
void first_listing_tend(void);
void reused_tend(void);
void own_id_unlock_plan(Backend *b);
void own_id_unlock_tend(Backend *b, int64_t hold);
void orphans_tend(void);
void wall_step_behind(Cluster *c, int idx);
bool delete_holder(Cluster *c);
void leaned_on_tend(void);
void barrier_tend(void);
bool send_pair_aim(Cluster *c);
Backend *owner_of(Cluster *c, const ZklSlot *s);
bool leader_between(const Cluster *c, const ZklSlot *s, const char *from, const char *to,
					bool (*each) (const Cluster *c, const ZkrChild *kid, const ZklSlot *arg), const ZklSlot *arg);

/* sim_aims_upgrade.c */
void ridden_upgrade_tend(void);
void sole_reader_tend(void);

#endif
