/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * libbpf loaded with dlopen() when a BPF view or watchdog opens (top --bpf,
 * serve, record's exit-latency triggers): linked, it was loaded by every
 * command with libelf and libz, `record --xen` in a PV dom0 among them,
 * whose start-up bench/xen-bench measures.
 *
 * The files that call libbpf include this header after <bpf/libbpf.h>:
 * each name below is then the pointer tv_bpf_load() filled.
 */
#ifndef TV_KVM_BPF_DL_H
#define TV_KVM_BPF_DL_H

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define TV_BPF_FUNCS(X)                                                                           \
	X(void, bpf_link__destroy, (struct bpf_link *))                                     \
	X(const void *, bpf_map__initial_value, (struct bpf_map *, size_t *))                  \
	X(int, bpf_map__reuse_fd, (struct bpf_map *, int))                                     \
	X(int, bpf_map__set_initial_value, (struct bpf_map *, const void *, size_t))           \
	X(int, bpf_map_delete_elem, (int, const void *))                                       \
	X(int, bpf_map_get_next_key, (int, const void *, void *))                              \
	X(int, bpf_map_lookup_elem, (int, const void *, void *))                               \
	X(int, bpf_map_update_elem, (int, const void *, const void *, __u64))                  \
	X(void, bpf_object__close, (struct bpf_object *))                                      \
	X(struct bpf_map *, bpf_object__find_map_by_name, (const struct bpf_object *, const char *)) \
	X(int, bpf_object__find_map_fd_by_name, (const struct bpf_object *, const char *))    \
	X(struct bpf_program *, bpf_object__find_program_by_name, (const struct bpf_object *, const char *)) \
	X(int, bpf_object__load, (struct bpf_object *))                                        \
	X(struct bpf_program *, bpf_object__next_program, (const struct bpf_object *, struct bpf_program *)) \
	X(struct bpf_object *, bpf_object__open_mem, (const void *, size_t, const struct bpf_object_open_opts *)) \
	X(struct bpf_link *, bpf_program__attach, (const struct bpf_program *))               \
	X(struct bpf_link *, bpf_program__attach_kprobe_opts, (const struct bpf_program *, const char *, const struct bpf_kprobe_opts *)) \
	X(struct bpf_link *, bpf_program__attach_perf_event, (const struct bpf_program *, int)) \
	X(struct bpf_link *, bpf_program__attach_uprobe_opts, (const struct bpf_program *, pid_t, const char *, size_t, const struct bpf_uprobe_opts *)) \
	X(int, bpf_program__set_attach_target, (struct bpf_program *, int, const char *))     \
	X(int, bpf_program__set_autoload, (struct bpf_program *, bool))                       \
	X(enum bpf_prog_type, bpf_program__type, (const struct bpf_program *))                \
	X(libbpf_print_fn_t, libbpf_set_print, (libbpf_print_fn_t))                           \
	X(int, ring_buffer__consume, (struct ring_buffer *))                                   \
	X(int, ring_buffer__epoll_fd, (const struct ring_buffer *))                            \
	X(void, ring_buffer__free, (struct ring_buffer *))                                     \
	X(struct ring_buffer *, ring_buffer__new, (int, ring_buffer_sample_fn, void *, const struct ring_buffer_opts *))

#define TV_BPF_MEMBER(ret, name, args) ret(*name) args;
struct tv_bpf_api {
	TV_BPF_FUNCS(TV_BPF_MEMBER)
};
#undef TV_BPF_MEMBER

/* Filled by tv_bpf_load(); read-only after. */
extern struct tv_bpf_api tv_bpf;

/*
 * Load libbpf.so.1 once; later calls return the first one's result.
 * Return: 0, or -ENOENT when it or one of its functions is missing (logged).
 * Call it before any other libbpf name: they are NULL until then.
 */
int tv_bpf_load(void);

#ifndef TV_BPF_DL_IMPL
#define bpf_link__destroy (tv_bpf.bpf_link__destroy)
#define bpf_map__initial_value (tv_bpf.bpf_map__initial_value)
#define bpf_map__reuse_fd (tv_bpf.bpf_map__reuse_fd)
#define bpf_map__set_initial_value (tv_bpf.bpf_map__set_initial_value)
#define bpf_map_delete_elem (tv_bpf.bpf_map_delete_elem)
#define bpf_map_get_next_key (tv_bpf.bpf_map_get_next_key)
#define bpf_map_lookup_elem (tv_bpf.bpf_map_lookup_elem)
#define bpf_map_update_elem (tv_bpf.bpf_map_update_elem)
#define bpf_object__close (tv_bpf.bpf_object__close)
#define bpf_object__find_map_by_name (tv_bpf.bpf_object__find_map_by_name)
#define bpf_object__find_map_fd_by_name (tv_bpf.bpf_object__find_map_fd_by_name)
#define bpf_object__find_program_by_name (tv_bpf.bpf_object__find_program_by_name)
#define bpf_object__load (tv_bpf.bpf_object__load)
#define bpf_object__next_program (tv_bpf.bpf_object__next_program)
#define bpf_object__open_mem (tv_bpf.bpf_object__open_mem)
#define bpf_program__attach (tv_bpf.bpf_program__attach)
#define bpf_program__attach_kprobe_opts (tv_bpf.bpf_program__attach_kprobe_opts)
#define bpf_program__attach_perf_event (tv_bpf.bpf_program__attach_perf_event)
#define bpf_program__attach_uprobe_opts (tv_bpf.bpf_program__attach_uprobe_opts)
#define bpf_program__set_attach_target (tv_bpf.bpf_program__set_attach_target)
#define bpf_program__set_autoload (tv_bpf.bpf_program__set_autoload)
#define bpf_program__type (tv_bpf.bpf_program__type)
#define libbpf_set_print (tv_bpf.libbpf_set_print)
#define ring_buffer__consume (tv_bpf.ring_buffer__consume)
#define ring_buffer__epoll_fd (tv_bpf.ring_buffer__epoll_fd)
#define ring_buffer__free (tv_bpf.ring_buffer__free)
#define ring_buffer__new (tv_bpf.ring_buffer__new)
#endif
#endif
