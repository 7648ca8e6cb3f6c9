/* Shared definitions of tunbench's tunnel programs (tunnel.c). The Go side
 * gets the same layouts from bpf2go (-type), so the two cannot drift. */
#ifndef TUNBENCH_TUNNEL_H
#define TUNBENCH_TUNNEL_H

#include <linux/types.h>

/* Encapsulations. */
enum encap {
	ENCAP_GENEVE = 1, /* UDP, Geneve with no options, inner Ethernet */
	ENCAP_VXLAN = 2,  /* UDP 4789, I flag, VNI, inner Ethernet */
	ENCAP_GRE = 3,    /* GRE (RFC 2784/2890), optional key, inner IP */
	ENCAP_IPIP = 4,   /* IPv4 or IPv6 directly in the outer IPv4 (4/41) */
};

/* Why a packet was dropped; index into counters.drops and the drops map.
 * Only tunbench's own packets are dropped: a packet to a rule's
 * destination, or a tunnel packet whose VNI or key has a decap entry. A
 * tunnel packet of an enabled encapsulation without a decap entry (the
 * host's own overlay on the same port or protocol) is not tunbench's: it
 * goes on unchanged (TC_ACT_UNSPEC) and is counted in the not_ours map. */
enum drop_reason {
	DROP_TRUNCATED = 0,  /* headers shorter than they claim */
	DROP_BAD_HEADER = 1, /* tunbench packet with a header it cannot handle */
	DROP_ENCAP = 2,      /* bpf_skb_adjust_room or store failed on encap */
	DROP_DECAP = 3,      /* bpf_skb_adjust_room failed on decap */
	DROP_MAX = 4,
};

/* Rule flags. */
#define RULE_F_GRE_KEY 0x1 /* GRE: put the key (vni) in the header */

struct counters {
	__u64 packets; /* a GSO packet counts as the segments it becomes */
	__u64 bytes;
	__u64 drops[DROP_MAX];
};

/* Key of the rules LPM trie: prefixlen is 32 + the prefix length of addr,
 * so that the family byte always matches.
 *
 * The trie stores the value right after the key's data (the key minus
 * prefixlen) in an 8-byte aligned node, so the data is padded to a multiple
 * of 8 bytes (tail): then the 64-bit counters in the value are 8-byte
 * aligned. Unaligned, an atomic add can straddle a cache line, a split
 * lock; in the VMs this project runs on one such add costs ~0.5 us, which
 * made the encap path 3.5 times as expensive (docs/performance.md). */
struct rule_key {
	__u32 prefixlen;
	__u8 family; /* 4 or 6: family of the inner destination */
	__u8 pad[3];
	__u8 addr[16];
	__u8 pad2[4]; /* see above; never part of the prefix */
};

/* Value of the rules map: how to encapsulate traffic to the prefix. */
struct rule {
	__u32 id;
	__u32 vni; /* VNI (Geneve, VXLAN) or GRE key */
	__u8 encap;
	__u8 family; /* 4 or 6: underlay family */
	__u8 flags;
	__u8 pad;
	__u16 sport_min; /* outer UDP source port range, host order */
	__u16 sport_max; /* min == max: fixed; otherwise from the flow hash */
	__u16 dport;     /* outer UDP destination port, host order */
	__u16 pad2;
	__u8 local[16];  /* underlay source (IPv4 in the first 4 bytes) */
	__u8 remote[16]; /* underlay destination */
	__u8 inner_dmac[6];
	__u8 inner_smac[6];
	struct counters c;
};

/* Key of the decap hash: which tunnel packets this endpoint accepts. */
struct decap_key {
	__u8 encap;
	__u8 pad[3];
	__u32 vni; /* VNI or GRE key; 0 for IPIP and GRE without key */
};

struct decap {
	__u32 id;
	__u32 pad;
	struct counters c;
};

/* The one entry of the config array. */
struct config {
	__u16 vxlan_port;  /* UDP destination port taken as VXLAN, host order */
	__u16 geneve_port; /* same for Geneve */
	__u32 decap_mask;  /* bit (1 << encap) set: decapsulate that encap */
};

#endif
