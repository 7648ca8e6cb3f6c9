//go:build ignore

// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
/* tunbench's own tunnel data path: one tc egress and one tc ingress program
 * on the underlay device serve every remote site.
 *
 * tunnel_egress looks the inner destination up in the rules LPM trie and,
 * on a match, grows the packet with bpf_skb_adjust_room (encapsulation
 * flags, so GSO packets stay GSO and are segmented as tunnel packets) and
 * writes the outer headers: IPv4 or IPv6, then UDP + VXLAN or Geneve +
 * inner Ethernet, GRE, or nothing (IPIP). The Ethernet header the stack
 * resolved for the covering overlay route (whose next hop is the underlay
 * next hop) is kept. Packets without a rule pass untouched.
 *
 * tunnel_ingress recognises VXLAN and Geneve (UDP destination port), GRE
 * and IPIP packets, checks the VNI or key against the decap hash, strips
 * the outer headers and hands the inner packet to the stack. A tunnel
 * packet whose VNI or key has no decap entry, or whose tunnel header
 * cannot be read or is not of the kind tunbench sends, is not tunbench's:
 * the host may carry its own VXLAN, Geneve, GRE or IPIP on the same port
 * or protocol. It goes on unchanged and is counted in not_ours; only a
 * packet that matched a decap entry can be dropped.
 *
 * Counters: per rule and per decap entry (packets, bytes, drops by reason),
 * per-CPU drops that no rule can own (see enum drop_reason), and per-CPU
 * tunnel packets passed on as not tunbench's (not_ours).
 *
 * Verdicts: a packet the programs encapsulated or decapsulated gets
 * TC_ACT_OK (classification ends there); a packet that is not the
 * tunnel's gets TC_ACT_UNSPEC, so it goes on to the host's own filters
 * at later priorities on the same device (and passes, as TC_ACT_OK would,
 * when none follows). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "tunnel.h"

/* Debian's kernel headers can be older than the kernel: these decap flags
 * came with Linux 6.3. */
#define TB_DECAP_L3_IPV4 (1ULL << 7)
#define TB_DECAP_L3_IPV6 (1ULL << 8)

#define ETH_P_TEB_BE bpf_htons(0x6558)
#define GRE_F_CSUM 0x8000
#define GRE_F_ROUTING 0x4000
#define GRE_F_KEY 0x2000
#define GRE_F_SEQ 0x1000
#define GRE_VERSION 0x0007
#define VXLAN_F_I 0x08
#define OUTER_TTL 64

char __license[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 20);
	__type(key, struct rule_key);
	__type(value, struct rule);
} rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct decap_key);
	__type(value, struct decap);
} decaps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} configs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* Tunnel packets of an enabled encapsulation that are not tunbench's (no
 * decap entry for their VNI or key, or a tunnel header tunbench does not
 * send), passed on unchanged. One per-CPU counter. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} not_ours SEC(".maps");

static __always_inline int drop(struct counters *c, __u32 reason)
{
	if (c) {
		if (reason < DROP_MAX)
			__sync_fetch_and_add(&c->drops[reason], 1);
	} else {
		__u64 *n = bpf_map_lookup_elem(&drops, &reason);
		if (n)
			*n += 1;
	}
	return TC_ACT_SHOT;
}

/* pass_not_ours counts a tunnel packet that is not tunbench's and hands
 * it, unchanged, to the host's next filter (or the stack). */
static __always_inline int pass_not_ours(void)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&not_ours, &zero);

	if (n)
		*n += 1;
	return TC_ACT_UNSPEC;
}

/* segments returns how many packets skb is on the wire: gso_segs, or, where
 * bpf_skb_adjust_room (here or at the sender) has reset it, the payload
 * beyond the inner IP and a 32-byte TCP header divided by gso_size. Call it
 * before bpf_skb_adjust_room. */
static __always_inline __u64 segments(struct __sk_buff *skb, __u32 inner_len, __u32 l3len)
{
	__u32 size = skb->gso_size;

	if (skb->gso_segs > 1)
		return skb->gso_segs;
	if (size == 0 || inner_len <= l3len + 32 + size)
		return 1;
	return (inner_len - l3len - 32 + size - 1) / size;
}

static __always_inline void count(struct counters *c, __u64 segs, __u32 bytes)
{
	__sync_fetch_and_add(&c->packets, segs);
	__sync_fetch_and_add(&c->bytes, bytes);
}

static __always_inline __u16 ipv4_csum(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 sum = 0;

#pragma clang loop unroll(full)
	for (int i = 0; i < (int)sizeof(*ip) / 2; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

static __always_inline void put_vni(__u8 *p, __u32 vni)
{
	p[0] = vni >> 16;
	p[1] = vni >> 8;
	p[2] = vni;
}

/* pull makes the first n bytes of skb readable in place: they are in the
 * linear part already (where the stack and the drivers here put the
 * headers), or bpf_skb_pull_data moves them there. Pointers into the
 * packet must be reloaded after it. Returns -1 when skb is shorter. */
static __always_inline int pull(struct __sk_buff *skb, __u32 n)
{
	if ((void *)(long)skb->data + n <= (void *)(long)skb->data_end)
		return 0;
	if (n > skb->len || bpf_skb_pull_data(skb, n) < 0)
		return -1;
	return 0;
}

/* The tunnel header's offset is bounded so the verifier can follow it:
 * outer IPv6 + UDP + Geneve with the largest options. */
#define MAX_TUNNEL_OFF 512

/* The tunnel header after the outer IP header, at most 8 + 8 + 14 bytes. */
struct l4hdr {
	__u8 b[32];
};

/* The outer headers as one buffer, written with one bpf_skb_store_bytes
 * (one helper call fewer per packet than storing the IP header and the
 * tunnel header apart). Packed: the tunnel header follows the IP header
 * directly. */
struct outer4 {
	struct iphdr ip;
	struct l4hdr l4;
} __attribute__((packed));

struct outer6 {
	struct ipv6hdr ip;
	struct l4hdr l4;
} __attribute__((packed));

SEC("tc")
int tunnel_egress(struct __sk_buff *skb)
{
	struct rule_key key = {};
	struct l4hdr l4 = {};
	__u32 len = skb->len;
	__u16 proto = skb->protocol;
	__u32 inner_len, l4len, claimed;
	__u64 flags = BPF_F_ADJ_ROOM_FIXED_GSO;
	__u8 l4proto, inner_family;
	struct rule *r;
	__u64 segs;

	if (len < ETH_HLEN)
		return TC_ACT_UNSPEC; /* not the tunnel's: the next filter decides */
	inner_len = len - ETH_HLEN;
	/* The IP header is read in place (see pull). */
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip;

		if (pull(skb, ETH_HLEN + sizeof(*ip)) < 0)
			return drop(0, DROP_TRUNCATED);
		ip = (void *)(long)skb->data + ETH_HLEN;
		if ((void *)(ip + 1) > (void *)(long)skb->data_end)
			return drop(0, DROP_TRUNCATED);
		inner_family = 4;
		key.prefixlen = 32 + 32;
		__builtin_memcpy(key.addr, &ip->daddr, 4);
		claimed = bpf_ntohs(ip->tot_len);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6;

		if (pull(skb, ETH_HLEN + sizeof(*ip6)) < 0)
			return drop(0, DROP_TRUNCATED);
		ip6 = (void *)(long)skb->data + ETH_HLEN;
		if ((void *)(ip6 + 1) > (void *)(long)skb->data_end)
			return drop(0, DROP_TRUNCATED);
		inner_family = 6;
		key.prefixlen = 32 + 128;
		__builtin_memcpy(key.addr, &ip6->daddr, 16);
		claimed = bpf_ntohs(ip6->payload_len);
		if (claimed)
			claimed += sizeof(*ip6);
	} else {
		return TC_ACT_UNSPEC;
	}
	key.family = inner_family;
	r = bpf_map_lookup_elem(&rules, &key);
	if (!r)
		return TC_ACT_UNSPEC;
	/* Big TCP leaves the length field 0; a larger claim is a lie. */
	if (claimed > inner_len)
		return drop(&r->c, DROP_TRUNCATED);
	segs = segments(skb, inner_len, inner_family == 4 ? 20 : 40);

	switch (r->encap) {
	case ENCAP_VXLAN:
	case ENCAP_GENEVE: {
		__u32 hash = bpf_get_hash_recalc(skb);
		__u16 sport = r->sport_min;
		struct udphdr *udp = (void *)l4.b;
		__u8 *t = l4.b + sizeof(*udp);
		struct ethhdr *eth = (void *)(t + 8);

		if (r->sport_max > r->sport_min)
			sport += hash % ((__u32)r->sport_max - r->sport_min + 1);
		l4proto = IPPROTO_UDP;
		l4len = sizeof(*udp) + 8 + ETH_HLEN;
		flags |= BPF_F_ADJ_ROOM_ENCAP_L4_UDP | BPF_F_ADJ_ROOM_ENCAP_L2(ETH_HLEN) |
			 BPF_F_ADJ_ROOM_ENCAP_L2_ETH;
		udp->source = bpf_htons(sport);
		udp->dest = bpf_htons(r->dport);
		udp->len = bpf_htons(inner_len + l4len);
		if (r->encap == ENCAP_VXLAN) {
			t[0] = VXLAN_F_I;
		} else {
			t[2] = 0x65; /* protocol type: Ethernet (0x6558) */
			t[3] = 0x58;
		}
		put_vni(t + 4, r->vni);
		__builtin_memcpy(eth->h_dest, r->inner_dmac, ETH_ALEN);
		__builtin_memcpy(eth->h_source, r->inner_smac, ETH_ALEN);
		eth->h_proto = proto;
		break;
	}
	case ENCAP_GRE: {
		__u16 *g = (void *)l4.b;

		l4proto = IPPROTO_GRE;
		flags |= BPF_F_ADJ_ROOM_ENCAP_L4_GRE;
		g[1] = proto;
		if (r->flags & RULE_F_GRE_KEY) {
			__u32 k = bpf_htonl(r->vni);

			g[0] = bpf_htons(GRE_F_KEY);
			__builtin_memcpy(l4.b + 4, &k, 4);
			l4len = 8;
		} else {
			l4len = 4;
		}
		break;
	}
	case ENCAP_IPIP:
		l4proto = inner_family == 4 ? IPPROTO_IPIP : IPPROTO_IPV6;
		l4len = 0;
		break;
	default:
		return drop(&r->c, DROP_BAD_HEADER);
	}

	if (r->family == 4) {
		struct outer4 o = {};
		struct iphdr oh = {};
		__u32 n = sizeof(oh) + l4len;

		oh.version = 4;
		oh.ihl = 5;
		oh.tot_len = bpf_htons(inner_len + sizeof(oh) + l4len);
		oh.frag_off = bpf_htons(0x4000); /* DF: the route MTU leaves room */
		oh.ttl = OUTER_TTL;
		oh.protocol = l4proto;
		__builtin_memcpy(&oh.saddr, r->local, 4);
		__builtin_memcpy(&oh.daddr, r->remote, 4);
		oh.check = ipv4_csum(&oh);
		o.ip = oh;
		o.l4 = l4;
		flags |= BPF_F_ADJ_ROOM_ENCAP_L3_IPV4;
		if (n > sizeof(o))
			return drop(&r->c, DROP_ENCAP);
		if (bpf_skb_adjust_room(skb, n, BPF_ADJ_ROOM_MAC, flags) < 0)
			return drop(&r->c, DROP_ENCAP);
		if (bpf_skb_store_bytes(skb, ETH_HLEN, &o, n, 0) < 0)
			return drop(&r->c, DROP_ENCAP);
		if (inner_family != 4) {
			__u16 p = bpf_htons(ETH_P_IP);

			bpf_skb_store_bytes(skb, 12, &p, 2, 0);
		}
	} else {
		struct outer6 o = {};
		struct ipv6hdr oh = {};
		__u32 hash = bpf_get_hash_recalc(skb);
		__u32 n = sizeof(oh) + l4len;

		oh.version = 6;
		oh.flow_lbl[0] = (hash >> 16) & 0x0f;
		oh.flow_lbl[1] = hash >> 8;
		oh.flow_lbl[2] = hash;
		oh.payload_len = bpf_htons(inner_len + l4len);
		oh.nexthdr = l4proto;
		oh.hop_limit = OUTER_TTL;
		__builtin_memcpy(&oh.saddr, r->local, 16);
		__builtin_memcpy(&oh.daddr, r->remote, 16);
		o.ip = oh;
		o.l4 = l4;
		flags |= BPF_F_ADJ_ROOM_ENCAP_L3_IPV6;
		if (n > sizeof(o))
			return drop(&r->c, DROP_ENCAP);
		if (bpf_skb_adjust_room(skb, n, BPF_ADJ_ROOM_MAC, flags) < 0)
			return drop(&r->c, DROP_ENCAP);
		if (bpf_skb_store_bytes(skb, ETH_HLEN, &o, n, 0) < 0)
			return drop(&r->c, DROP_ENCAP);
		if (inner_family != 6) {
			__u16 p = bpf_htons(ETH_P_IPV6);

			bpf_skb_store_bytes(skb, 12, &p, 2, 0);
		}
	}
	count(&r->c, segs, inner_len);
	return TC_ACT_OK;
}

SEC("tc")
int tunnel_ingress(struct __sk_buff *skb)
{
	__u32 zero = 0, off = ETH_HLEN, hlen = 0, vni = 0, encap;
	__u16 proto = skb->protocol, inner_proto = 0;
	__u8 l4proto, outer_family, inner_eth = 0;
	struct decap_key key = {};
	struct config *cfg;
	struct decap *d;
	__u64 flags = BPF_F_ADJ_ROOM_FIXED_GSO, segs;
	__u32 inner_len, claimed;
	void *data, *end;

	cfg = bpf_map_lookup_elem(&configs, &zero);
	if (!cfg || !cfg->decap_mask)
		return TC_ACT_UNSPEC;
	/* Headers are read in place (direct packet access), which costs far
	 * less per packet than a bpf_skb_load_bytes call for each. */
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip;

		if (pull(skb, ETH_HLEN + sizeof(*ip)) < 0)
			return TC_ACT_UNSPEC;
		data = (void *)(long)skb->data;
		end = (void *)(long)skb->data_end;
		ip = data + ETH_HLEN;
		if ((void *)(ip + 1) > end)
			return TC_ACT_UNSPEC;
		/* Options and fragments are left to the stack. */
		if (ip->ihl != 5 || (ip->frag_off & bpf_htons(0x3fff)))
			return TC_ACT_UNSPEC;
		l4proto = ip->protocol;
		outer_family = 4;
		off += sizeof(*ip);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6;

		if (pull(skb, ETH_HLEN + sizeof(*ip6)) < 0)
			return TC_ACT_UNSPEC;
		data = (void *)(long)skb->data;
		end = (void *)(long)skb->data_end;
		ip6 = data + ETH_HLEN;
		if ((void *)(ip6 + 1) > end)
			return TC_ACT_UNSPEC;
		l4proto = ip6->nexthdr;
		outer_family = 6;
		off += sizeof(*ip6);
	} else {
		return TC_ACT_UNSPEC;
	}

	switch (l4proto) {
	case IPPROTO_UDP: {
		struct udphdr *udp;
		__u8 *t;
		__u16 dport;

		if (pull(skb, off + sizeof(*udp)) < 0)
			return TC_ACT_UNSPEC;
		data = (void *)(long)skb->data;
		end = (void *)(long)skb->data_end;
		udp = data + off;
		if ((void *)(udp + 1) > end)
			return TC_ACT_UNSPEC;
		dport = bpf_ntohs(udp->dest);
		if (dport == cfg->vxlan_port && (cfg->decap_mask & (1 << ENCAP_VXLAN)))
			encap = ENCAP_VXLAN;
		else if (dport == cfg->geneve_port && (cfg->decap_mask & (1 << ENCAP_GENEVE)))
			encap = ENCAP_GENEVE;
		else
			return TC_ACT_UNSPEC;
		/* Until the VNI matches a decap entry the packet may be the
		 * host's own: whatever does not fit goes on unchanged. */
		hlen = sizeof(*udp) + 8;
		if (pull(skb, off + hlen) < 0)
			return pass_not_ours();
		data = (void *)(long)skb->data;
		end = (void *)(long)skb->data_end;
		t = data + off + sizeof(*udp);
		if ((void *)(t + 8) > end)
			return pass_not_ours();
		if (encap == ENCAP_VXLAN) {
			if (!(t[0] & VXLAN_F_I))
				return pass_not_ours();
		} else {
			/* Version 0, protocol Ethernet; options are skipped. */
			if ((t[0] >> 6) != 0 || t[2] != 0x65 || t[3] != 0x58)
				return pass_not_ours();
			hlen += (t[0] & 0x3f) * 4;
		}
		vni = (__u32)t[4] << 16 | (__u32)t[5] << 8 | t[6];
		inner_eth = 1;
		break;
	}
	case IPPROTO_GRE: {
		__u16 *g;
		__u16 gflags;

		if (!(cfg->decap_mask & (1 << ENCAP_GRE)))
			return TC_ACT_UNSPEC;
		encap = ENCAP_GRE;
		/* As for UDP: not tunbench's until the key matches. */
		if (pull(skb, off + 16) < 0 && pull(skb, off + 4) < 0)
			return pass_not_ours();
		data = (void *)(long)skb->data;
		end = (void *)(long)skb->data_end;
		g = data + off;
		if ((void *)(g + 2) > end)
			return pass_not_ours();
		gflags = bpf_ntohs(g[0]);
		inner_proto = g[1];
		/* Version 1 is PPTP's enhanced GRE; routing went with RFC 1701. */
		if (gflags & (GRE_VERSION | GRE_F_ROUTING))
			return pass_not_ours();
		hlen = 4;
		if (gflags & GRE_F_CSUM)
			hlen += 4;
		if (gflags & GRE_F_KEY) {
			__u8 *k = (void *)g + hlen;

			if ((void *)(k + 4) > end)
				return pass_not_ours();
			vni = (__u32)k[0] << 24 | (__u32)k[1] << 16 | (__u32)k[2] << 8 | k[3];
			hlen += 4;
		}
		if (gflags & GRE_F_SEQ)
			hlen += 4;
		break;
	}
	case IPPROTO_IPIP:
	case IPPROTO_IPV6:
		if (!(cfg->decap_mask & (1 << ENCAP_IPIP)))
			return TC_ACT_UNSPEC;
		encap = ENCAP_IPIP;
		inner_proto = l4proto == IPPROTO_IPIP ? bpf_htons(ETH_P_IP) : bpf_htons(ETH_P_IPV6);
		break;
	default:
		return TC_ACT_UNSPEC;
	}

	key.encap = encap;
	key.vni = vni;
	d = bpf_map_lookup_elem(&decaps, &key);
	if (!d)
		return pass_not_ours();

	/* tunbench's from here on: what is broken is dropped and counted on
	 * the decap entry. */
	if (inner_eth) {
		struct ethhdr *ie;

		if (pull(skb, off + hlen + sizeof(*ie)) < 0)
			return drop(&d->c, DROP_TRUNCATED);
		data = (void *)(long)skb->data;
		end = (void *)(long)skb->data_end;
		ie = data + ((off + hlen) & (MAX_TUNNEL_OFF - 1));
		if ((void *)(ie + 1) > end)
			return drop(&d->c, DROP_TRUNCATED);
		inner_proto = ie->h_proto;
		hlen += sizeof(*ie);
	}
	hlen += off - ETH_HLEN;
	if (inner_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip;

		if (pull(skb, ETH_HLEN + hlen + sizeof(*ip)) < 0)
			return drop(&d->c, DROP_TRUNCATED);
		data = (void *)(long)skb->data;
		end = (void *)(long)skb->data_end;
		ip = data + ((ETH_HLEN + hlen) & (MAX_TUNNEL_OFF - 1));
		if ((void *)(ip + 1) > end)
			return drop(&d->c, DROP_TRUNCATED);
		claimed = bpf_ntohs(ip->tot_len);
		if (outer_family != 4)
			flags |= TB_DECAP_L3_IPV4;
	} else if (inner_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6;

		if (pull(skb, ETH_HLEN + hlen + sizeof(*ip6)) < 0)
			return drop(&d->c, DROP_TRUNCATED);
		data = (void *)(long)skb->data;
		end = (void *)(long)skb->data_end;
		ip6 = data + ((ETH_HLEN + hlen) & (MAX_TUNNEL_OFF - 1));
		if ((void *)(ip6 + 1) > end)
			return drop(&d->c, DROP_TRUNCATED);
		claimed = bpf_ntohs(ip6->payload_len) + sizeof(*ip6);
		if (outer_family != 6)
			flags |= TB_DECAP_L3_IPV6;
	} else {
		return drop(&d->c, DROP_BAD_HEADER);
	}
	if (claimed > skb->len - ETH_HLEN - hlen)
		return drop(&d->c, DROP_TRUNCATED);

	inner_len = skb->len - ETH_HLEN - hlen;
	segs = segments(skb, inner_len, inner_proto == bpf_htons(ETH_P_IP) ? 20 : 40);
	if (bpf_skb_adjust_room(skb, -(__s32)hlen, BPF_ADJ_ROOM_MAC, flags) < 0)
		return drop(&d->c, DROP_DECAP);
	/* The outer Ethernet header stays; its type changes only when the
	 * inner family differs from the outer one. */
	if (inner_proto != proto && bpf_skb_store_bytes(skb, 12, &inner_proto, sizeof(inner_proto), 0) < 0)
		return drop(&d->c, DROP_DECAP);
	count(&d->c, segs, inner_len);
	return TC_ACT_OK;
}
