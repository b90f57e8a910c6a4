/* SPDX-License-Identifier: LGPL-2.1 */
/* Writing the static files of a session's domain directory. */
#ifndef TV_KVM_SESSION_FILES_H
#define TV_KVM_SESSION_FILES_H

struct tv_event_list;

/* header_page, header_event and events/SYS/EVENT/format of every event. */
int tv_session_write_formats(const char *domain_dir, const char *tracing_dir,
			     const struct tv_event_list *events);
/* saved_cmdlines and saved_tgids, read at the end of the recording. */
int tv_session_write_task_maps(const char *domain_dir, const char *tracing_dir);
/* tv_session_remove_tree() is lib's (tv_internal.h). */

#endif
