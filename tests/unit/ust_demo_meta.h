/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Metadata entries (lib/ust/ust_abi.h's text format) of synthetic demo events,
 * shared by the unit tests and the fake traced process
 * (tests/helpers/tv-ust-fake.c), so both describe the same events.
 */
#ifndef TV_TEST_UST_DEMO_META_H
#define TV_TEST_UST_DEMO_META_H

/* The common fields every event's format starts with. */
#define UST_DEMO_COMMON_FIELDS \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" \
	"\tfield:unsigned short common_size;\toffset:2;\tsize:2;\tsigned:0;\n" \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

/* demo:NAME, event ID, with u32 thread and u64 seq (as ust-demo's work events). */
#define UST_DEMO_WORK_EVENT(ID, NAME) \
	"event " #ID " demo:" NAME "\n" \
	"name: " NAME "\nID: " #ID "\nformat:\n" \
	UST_DEMO_COMMON_FIELDS \
	"\tfield:u32 thread;\toffset:8;\tsize:4;\tsigned:0;\n" \
	"\tfield:u64 seq;\toffset:16;\tsize:8;\tsigned:0;\n\n" \
	"print fmt: \"thread=%u seq=%llu\", REC->thread, REC->seq\n" \
	"end\n"

/* demo:work_begin (1) and demo:work_end (2). */
#define UST_DEMO_META_WORK UST_DEMO_WORK_EVENT(1, "work_begin") UST_DEMO_WORK_EVENT(2, "work_end")

#endif
