/*
 * gwait_int.h — what the files of deadlock detection across clusters share
 * (gwait_doc.c, gwait.c, gwait_edges.c): the joined graph of every
 * cluster's document, and nothing else includes.
 */
#ifndef ZK_LOCK_GWAIT_INT_H
#define ZK_LOCK_GWAIT_INT_H

#include "gwait.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadlock.h"
#include "keys.h"

#define MAX_VERTS	512
#define MAX_EDGES	4096
#define MAX_HOLDS	4096
#define HEAVY		'L'			/* a vertex waiting in the lock manager */
#define AGE_UNKNOWN	INT64_MAX		/* no node's czxid known yet: counts as the youngest */

typedef struct Word
{
	const char *p;
	int			len;
} Word;

typedef struct Vert
{
	int64_t		session;
	int			pid;
	int64_t		age;
	char		mode;
	Word		key;
	Word		node;			/* its waiting node ("-": none) */
	Word		cluster;
	int64_t		since;			/* wall, its cluster's clock: when the wait began */
	int			need;			/* 0: waits for every edge; else for this many of them (S) */
	int			unknown;		/* of those, nodes no cluster published: they go */
	bool		goes;			/* it can go on: not deadlocked */
	/* Tarjan's */
	int			index;
	int			low;
	bool		on_stack;
	int			scc;
	bool		crosses;		/* it has a wait across clusters inside its part */
} Vert;

typedef struct RawEdge
{
	int			from;
	bool		local;			/* P: to a backend of the same session */
	int			pid;
	Word		name;			/* E: a node */
} RawEdge;

typedef struct Hold
{
	Word		name;
	int			vert;
} Hold;

typedef struct Edge
{
	int			from;
	int			to;
	Word		via;			/* the node waited for (len 0: a backend of one cluster) */
} Edge;

typedef struct Graph
{
	int			nv;
	Vert		v[MAX_VERTS];
	int			nraw;
	RawEdge		raw[MAX_EDGES];
	int			nholds;
	Hold		holds[MAX_HOLDS];
	int			ne;
	Edge		e[MAX_EDGES];
	int			first[MAX_VERTS + 1];	/* e[] sorted by from: first[v] .. first[v + 1] */
	int			stack[MAX_VERTS];
	int			nstack;
	int			next_index;
	int			nscc;
	/* the search for a cycle, over states (vertex, crossed a session yet): 2 v + crossed */
	int			parent[2 * MAX_VERTS];	/* the edge that reached a state */
	int			from[2 * MAX_VERTS];	/* and the state it left */
	int			queue[2 * MAX_VERTS];
	int			closing;		/* the edge back to the start, and its state */
	int			closing_from;
	bool		unproven;		/* the cycle needs more checks than a claim has */
} Graph;

extern Graph zc_gwait_graph;		/* 300 kB: not on the stack */

extern void zc_gwait_key_text(Word key, char *out, size_t len);
extern void zc_gwait_link(void);
extern void zc_gwait_parse_doc(const char *doc);
extern bool zc_gwait_put(char *out, size_t len, size_t *n, const char *fmt,
					...) __attribute__((format(printf, 4, 5)));
extern bool zc_gwait_word_eq(Word a, Word b);

#endif
