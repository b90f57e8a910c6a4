// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the consumer of a traced process's mapping
 * (lib/ust/ust_consumer.c), whose every byte the process controls.  The input
 * is the whole mapping: the header is checked against its size, the
 * metadata parsed, and every buffer read and recovered until the consumer
 * stops; nothing may be read outside the input (ASan) or loop forever.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ust_consumer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tv_ust_consumer c;
	unsigned char *map, *out;

	map = malloc(size ? size : 1);
	if (!map)
		return 0;
	memcpy(map, data, size);
	if (tv_ust_consumer_init(&c, map, size) == 0) {
		out = malloc(c.hdr.subbuf_size);
		tv_ust_consumer_meta_update(&c, NULL, 0);
		/* at most two laps per buffer: a read either moves on or stops */
		for (unsigned int b = 0; out && b < c.hdr.nr_bufs && !c.cut; b++)
			for (unsigned int i = 0; i < 2 * c.hdr.nr_subbufs + 1 && !c.cut; i++)
				if (tv_ust_consumer_read(&c, b, out) != 1 &&
				    tv_ust_consumer_recover(&c, b, out) != 1)
					break;
		free(out);
	}
	tv_ust_consumer_release(&c);
	free(map);
	return 0;
}
