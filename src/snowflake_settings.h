/*-------------------------------------------------------------------------
 *
 * snowflake_settings.h
 *	  The layout and nodes of flake_next() ids: flake.epoch, flake.node_bits,
 *	  flake.sequence_bits, flake.id_bits, flake.nodes, flake.rekey_nodes,
 *	  flake.max_borrow.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_SNOWFLAKE_SETTINGS_H
#define FLAKE_SNOWFLAKE_SETTINGS_H

/*
 * Per-node state lives in shared memory for every node of the node space,
 * so that flake_next(node) is safe for any node.  This caps the node space.
 */
#define SNOWFLAKE_MAX_NODE_BITS 16

extern char *snowflake_epoch_string;
extern int64 snowflake_epoch_unix_ms;
extern int	snowflake_node_bits;
extern int	snowflake_sequence_bits;
extern int	snowflake_id_bits;
extern char *snowflake_nodes_string;
extern char *snowflake_rekey_nodes_string;
extern int	snowflake_max_borrow_ms;
extern void snowflake_define_settings(void);
extern void snowflake_check_settings(void);
extern bool snowflake_is_rekey_node(int node);

/*
 * The bits of milliseconds since flake.epoch in a flake_next() id:
 * flake.id_bits (63, or 53 for ids JavaScript holds exactly) less the node
 * and sequence bits.
 */
static inline int
snowflake_timestamp_bits(void)
{
	return snowflake_id_bits - snowflake_node_bits - snowflake_sequence_bits;
}

/*
 * The largest timestamp a flake_next() id holds, in milliseconds since
 * flake.epoch, so that every id is below 2^flake.id_bits.  Timestamps are
 * compared with it before they are shifted into place, since a wider one
 * would leave the layout.
 */
static inline int64
snowflake_max_timestamp(void)
{
	return (INT64CONST(1) << snowflake_timestamp_bits()) - 1;
}

#endif							/* FLAKE_SNOWFLAKE_SETTINGS_H */
