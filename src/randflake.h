/*-------------------------------------------------------------------------
 *
 * randflake.h
 *	  The Randflake layout, and what randflake.c offers the files above it.
 *
 * Plain C without PostgreSQL headers, so the layout can be used by the
 * tests of the cipher (test/unit, test/fuzz).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_RANDFLAKE_H
#define FLAKE_RANDFLAKE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Raw id layout: ((unix_s - epoch) << 34) | (node << 17) | seq, computed in
 * uint64 (gosuda/randflake v1.8.0); the id is its encryption (sparx.h).
 */
#define RANDFLAKE_EPOCH_UNIX	INT64_C(1730000000)
#define RANDFLAKE_TIME_BITS		30
#define RANDFLAKE_NODE_BITS		17
#define RANDFLAKE_SEQUENCE_BITS	17
#define RANDFLAKE_MAX_NODE		((1 << RANDFLAKE_NODE_BITS) - 1)
#define RANDFLAKE_MAX_SEQUENCE	((1 << RANDFLAKE_SEQUENCE_BITS) - 1)

struct FlakeNodeSpace;

extern void randflake_define_settings(void);
extern void randflake_add_shmem(void);
extern bool randflake_node_space(struct FlakeNodeSpace *space);
extern int32_t randflake_node_of(int64_t id);
extern bool randflake_own_node(int64_t node, const char **own);
extern uint64_t randflake_raw_of(int64_t id);
extern void randflake_raise_node(uint64_t raw);

#endif							/* FLAKE_RANDFLAKE_H */
