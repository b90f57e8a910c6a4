/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The libraries only serve uses: OpenSSL (libssl, libcrypto) and libcrypt
 * for its web config (TLS, Basic and bearer auth), libyaml to read that
 * config, json-c for Alertmanager's webhooks.  Loaded with dlopen() when a
 * web config is read or an alert comes: linked, they were loaded by every
 * command, and `record --xen` in a PV dom0 paid for their symbol lookups
 * (libcrypto's alone 3,377 of the 5,600 at start) before recording
 * anything (bench/xen-bench, startup row).
 *
 * The files that call them include this header after the libraries' own:
 * each name below is then the pointer loaded by serve_dl_load().
 */
#ifndef TV_SERVE_DL_H
#define TV_SERVE_DL_H

#include <crypt.h>
#include <json-c/json.h>
#include <yaml.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#define SERVE_DL_FUNCS(X)                                                                    \
	X(libssl, int, SSL_get_error, (const SSL *, int))                                    \
	X(libssl, SSL *, SSL_new, (SSL_CTX *))                                               \
	X(libssl, int, SSL_set_fd, (SSL *, int))                                             \
	X(libssl, int, SSL_accept, (SSL *))                                                  \
	X(libssl, int, SSL_read, (SSL *, void *, int))                                       \
	X(libssl, int, SSL_write, (SSL *, const void *, int))                                \
	X(libssl, int, SSL_shutdown, (SSL *))                                                \
	X(libssl, void, SSL_free, (SSL *))                                                   \
	X(libssl, SSL_CTX *, SSL_CTX_new, (const SSL_METHOD *))                              \
	X(libssl, const SSL_METHOD *, TLS_server_method, (void))                             \
	X(libssl, long, SSL_CTX_ctrl, (SSL_CTX *, int, long, void *))                        \
	X(libssl, int, SSL_CTX_use_certificate_chain_file, (SSL_CTX *, const char *))        \
	X(libssl, int, SSL_CTX_use_PrivateKey_file, (SSL_CTX *, const char *, int))          \
	X(libssl, int, SSL_CTX_check_private_key, (const SSL_CTX *))                         \
	X(libssl, int, SSL_CTX_load_verify_locations, (SSL_CTX *, const char *, const char *)) \
	X(libssl, void, SSL_CTX_set_verify, (SSL_CTX *, int, SSL_verify_cb))                 \
	X(libssl, void, SSL_CTX_free, (SSL_CTX *))                                           \
	X(libssl, void, ERR_error_string_n, (unsigned long, char *, size_t))                 \
	X(libssl, unsigned long, ERR_get_error, (void))                                      \
	X(libssl, int, EVP_DecodeBlock, (unsigned char *, const unsigned char *, int))       \
	X(libssl, void, OPENSSL_cleanse, (void *, size_t))                                   \
	X(libssl, int, CRYPTO_memcmp, (const void *, const void *, size_t))                  \
	X(libcrypt, char *, crypt_r, (const char *, const char *, struct crypt_data *))       \
	X(libyaml, void, yaml_document_delete, (yaml_document_t *))                          \
	X(libyaml, yaml_node_t *, yaml_document_get_node, (yaml_document_t *, int))          \
	X(libyaml, yaml_node_t *, yaml_document_get_root_node, (yaml_document_t *))          \
	X(libyaml, void, yaml_parser_delete, (yaml_parser_t *))                              \
	X(libyaml, int, yaml_parser_initialize, (yaml_parser_t *))                           \
	X(libyaml, int, yaml_parser_load, (yaml_parser_t *, yaml_document_t *))              \
	X(libyaml, void, yaml_parser_set_input_file, (yaml_parser_t *, FILE *))              \
	X(libjson, json_object *, json_object_array_get_idx, (const json_object *, size_t))  \
	X(libjson, size_t, json_object_array_length, (const json_object *))                  \
	X(libjson, const char *, json_object_get_string, (json_object *))                    \
	X(libjson, int, json_object_is_type, (const json_object *, json_type))               \
	X(libjson, json_bool, json_object_object_get_ex, (const json_object *, const char *, json_object **)) \
	X(libjson, int, json_object_put, (json_object *))                                    \
	X(libjson, const char *, json_tokener_error_desc, (enum json_tokener_error))         \
	X(libjson, void, json_tokener_free, (json_tokener *))                                \
	X(libjson, enum json_tokener_error, json_tokener_get_error, (json_tokener *))        \
	X(libjson, size_t, json_tokener_get_parse_end, (json_tokener *))                     \
	X(libjson, json_tokener *, json_tokener_new, (void))                                 \
	X(libjson, json_object *, json_tokener_parse_ex, (json_tokener *, const char *, int))

#define SERVE_DL_MEMBER(lib, ret, name, args) ret(*name) args;
struct serve_dl_api {
	SERVE_DL_FUNCS(SERVE_DL_MEMBER)
};
#undef SERVE_DL_MEMBER

/* Filled by serve_dl_load(); read-only after. */
extern struct serve_dl_api serve_dl;

/*
 * Load libssl.so.3 (libcrypto comes with it), libcrypt.so.1, libyaml-0.so.2
 * and libjson-c.so.5, once; later calls return the first one's result.
 * Return: 0, or -ENOENT when a library or one of its functions is missing
 * (logged, naming which).  Nothing to free: they stay loaded until exit.
 */
int serve_dl_load(void);

#ifndef SERVE_DL_IMPL
#define SSL_get_error (serve_dl.SSL_get_error)
#define SSL_new (serve_dl.SSL_new)
#define SSL_set_fd (serve_dl.SSL_set_fd)
#define SSL_accept (serve_dl.SSL_accept)
#define SSL_read (serve_dl.SSL_read)
#define SSL_write (serve_dl.SSL_write)
#define SSL_shutdown (serve_dl.SSL_shutdown)
#define SSL_free (serve_dl.SSL_free)
#define SSL_CTX_new (serve_dl.SSL_CTX_new)
#define TLS_server_method (serve_dl.TLS_server_method)
#define SSL_CTX_ctrl (serve_dl.SSL_CTX_ctrl)
#define SSL_CTX_use_certificate_chain_file (serve_dl.SSL_CTX_use_certificate_chain_file)
#define SSL_CTX_use_PrivateKey_file (serve_dl.SSL_CTX_use_PrivateKey_file)
#define SSL_CTX_check_private_key (serve_dl.SSL_CTX_check_private_key)
#define SSL_CTX_load_verify_locations (serve_dl.SSL_CTX_load_verify_locations)
#define SSL_CTX_set_verify (serve_dl.SSL_CTX_set_verify)
#define SSL_CTX_free (serve_dl.SSL_CTX_free)
#define ERR_error_string_n (serve_dl.ERR_error_string_n)
#define ERR_get_error (serve_dl.ERR_get_error)
#define EVP_DecodeBlock (serve_dl.EVP_DecodeBlock)
#undef OPENSSL_cleanse
#define OPENSSL_cleanse (serve_dl.OPENSSL_cleanse)
#undef CRYPTO_memcmp
#define CRYPTO_memcmp (serve_dl.CRYPTO_memcmp)
#define crypt_r (serve_dl.crypt_r)
#define yaml_document_delete (serve_dl.yaml_document_delete)
#define yaml_document_get_node (serve_dl.yaml_document_get_node)
#define yaml_document_get_root_node (serve_dl.yaml_document_get_root_node)
#define yaml_parser_delete (serve_dl.yaml_parser_delete)
#define yaml_parser_initialize (serve_dl.yaml_parser_initialize)
#define yaml_parser_load (serve_dl.yaml_parser_load)
#define yaml_parser_set_input_file (serve_dl.yaml_parser_set_input_file)
#define json_object_array_get_idx (serve_dl.json_object_array_get_idx)
#define json_object_array_length (serve_dl.json_object_array_length)
#define json_object_get_string (serve_dl.json_object_get_string)
#define json_object_is_type (serve_dl.json_object_is_type)
#define json_object_object_get_ex (serve_dl.json_object_object_get_ex)
#define json_object_put (serve_dl.json_object_put)
#define json_tokener_error_desc (serve_dl.json_tokener_error_desc)
#define json_tokener_free (serve_dl.json_tokener_free)
#define json_tokener_get_error (serve_dl.json_tokener_get_error)
#define json_tokener_get_parse_end (serve_dl.json_tokener_get_parse_end)
#define json_tokener_new (serve_dl.json_tokener_new)
#define json_tokener_parse_ex (serve_dl.json_tokener_parse_ex)
#endif
#endif
