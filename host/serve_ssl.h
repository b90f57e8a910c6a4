/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * OpenSSL (libssl, libcrypto) and libcrypt for serve's web config (TLS,
 * Basic and bearer auth), loaded with dlopen() when a web config is read:
 * linked, they were loaded by every command, and `record --xen` in a PV
 * dom0 paid for their symbol lookups (libcrypto's alone 3,377 of the 5,600
 * at start) before recording anything (bench/xen-bench, startup row).
 *
 * The files that call them include this header after OpenSSL's: each name
 * below is then the pointer loaded by serve_ssl_load().
 */
#ifndef TV_SERVE_SSL_H
#define TV_SERVE_SSL_H

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#define SERVE_SSL_FUNCS(X)                                                                    \
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
	X(libcrypt, char *, crypt_r, (const char *, const char *, struct crypt_data *))

#define SERVE_SSL_MEMBER(lib, ret, name, args) ret(*name) args;
struct serve_ssl_api {
	SERVE_SSL_FUNCS(SERVE_SSL_MEMBER)
};
#undef SERVE_SSL_MEMBER

/* Filled by serve_ssl_load(); read-only after. */
extern struct serve_ssl_api serve_ssl;

/*
 * Load libssl.so.3 (libcrypto comes with it) and libcrypt.so.1, once; later
 * calls return the first one's result.  Return: 0, or -ENOENT when a
 * library or one of its functions is missing (logged, naming which).
 * Nothing to free: they stay loaded until exit.
 */
int serve_ssl_load(void);

#ifndef SERVE_SSL_IMPL
#define SSL_get_error (serve_ssl.SSL_get_error)
#define SSL_new (serve_ssl.SSL_new)
#define SSL_set_fd (serve_ssl.SSL_set_fd)
#define SSL_accept (serve_ssl.SSL_accept)
#define SSL_read (serve_ssl.SSL_read)
#define SSL_write (serve_ssl.SSL_write)
#define SSL_shutdown (serve_ssl.SSL_shutdown)
#define SSL_free (serve_ssl.SSL_free)
#define SSL_CTX_new (serve_ssl.SSL_CTX_new)
#define TLS_server_method (serve_ssl.TLS_server_method)
#define SSL_CTX_ctrl (serve_ssl.SSL_CTX_ctrl)
#define SSL_CTX_use_certificate_chain_file (serve_ssl.SSL_CTX_use_certificate_chain_file)
#define SSL_CTX_use_PrivateKey_file (serve_ssl.SSL_CTX_use_PrivateKey_file)
#define SSL_CTX_check_private_key (serve_ssl.SSL_CTX_check_private_key)
#define SSL_CTX_load_verify_locations (serve_ssl.SSL_CTX_load_verify_locations)
#define SSL_CTX_set_verify (serve_ssl.SSL_CTX_set_verify)
#define SSL_CTX_free (serve_ssl.SSL_CTX_free)
#define ERR_error_string_n (serve_ssl.ERR_error_string_n)
#define ERR_get_error (serve_ssl.ERR_get_error)
#define EVP_DecodeBlock (serve_ssl.EVP_DecodeBlock)
#undef OPENSSL_cleanse
#define OPENSSL_cleanse (serve_ssl.OPENSSL_cleanse)
#undef CRYPTO_memcmp
#define CRYPTO_memcmp (serve_ssl.CRYPTO_memcmp)
#define crypt_r (serve_ssl.crypt_r)
#endif
#endif
