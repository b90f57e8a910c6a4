// SPDX-License-Identifier: GPL-2.0
/*
 * test_ust_registry's cases with call sites built without static branches
 * (TV_UST_NO_STATIC_BRANCH: the load-and-branch of architectures without
 * code patching), in the same process as a library built with them
 * (build/tests/libust_plugin.so): both kinds follow enable and disable.
 */
#define TV_UST_NO_STATIC_BRANCH
#define UST_TEST_NAME "test_ust_branch"
#include "test_ust_registry.c"

_Static_assert(!TV_UST_STATIC_BRANCH, "built with the load-and-branch");
