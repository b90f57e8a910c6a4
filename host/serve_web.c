// SPDX-License-Identifier: LGPL-2.1
/*
 * tracevisor serve's --web.config.file: the Prometheus exporter-toolkit's
 * web configuration (YAML, read with libyaml): TLS (tls_server_config:
 * cert_file, key_file, client_ca_file, client_auth_type, min_version,
 * max_version), HTTP basic authentication (basic_auth_users: user: bcrypt
 * hash, checked with libcrypt's crypt_r()), and, tracevisor's extension,
 * bearer_token_file: a file whose one line is the token a scraper sends
 * as "Authorization: Bearer TOKEN" (Prometheus: authorization:
 * credentials_file).  With users and a token both, either passes.  A key
 * the toolkit has and this does not (cipher_suites, http_server_config...)
 * is refused, not ignored: a setting silently dropped would weaken what
 * its author meant.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "tv_internal.h"
#include "serve.h"
#include "serve_dl.h"

#define MAX_USERS 64
#define TOKEN_MAX 4096

struct serve_web {
	char *token;			/* NULL: no bearer token */
	struct {
		char *user, *hash;
	} users[MAX_USERS];
	size_t nr_users;
	SSL_CTX *tls;			/* NULL: plain HTTP */
};

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The one line of @path (a token), trailing newline cut: 0 or -errno (logged). */
static int read_token(const char *cfg, const char *path, char **out)
{
	char buf[TOKEN_MAX + 2];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f) {
		int err = errno;

		tv_err("Cannot open bearer_token_file: path=\"%s\" (in %s), errno=%d (%s)", path, cfg, err,
		       strerror(err));
		return -err;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	if (!buf[0] || n > TOKEN_MAX + 1) {
		tv_err("Invalid bearer_token_file: path=\"%s\" (in %s): %s", path, cfg,
		       buf[0] ? "longer than 4096 bytes" : "empty");
		return -EINVAL;
	}
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

static int tls_version(const char *cfg, const char *key, const char *v, int *out)
{
	static const struct { const char *name; int version; } versions[] = {
		{ "TLS10", TLS1_VERSION }, { "TLS11", TLS1_1_VERSION },
		{ "TLS12", TLS1_2_VERSION }, { "TLS13", TLS1_3_VERSION },
	};

	for (size_t i = 0; v && i < sizeof(versions) / sizeof(versions[0]); i++)
		if (!strcmp(v, versions[i].name)) {
			*out = versions[i].version;
			return 0;
		}
	tv_err("Invalid web config %s: tls_server_config.%s \"%s\" (TLS10, TLS11, TLS12 or TLS13)", cfg, key,
	       v ? v : "");
	return -EINVAL;
}

/* OpenSSL's last error as text, for one line. */
static const char *ssl_error(void)
{
	static __thread char buf[256];

	ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
	return buf;
}

/* tls_server_config's mapping @map into @w->tls. */
static int load_tls(struct serve_web *w, const char *cfg, yaml_document_t *doc, yaml_node_t *map)
{
	const char *cert = NULL, *key = NULL, *ca = NULL, *auth = "NoClientCert";
	int min = TLS1_2_VERSION, max = 0, ret = 0, verify;

	if (map->type != YAML_MAPPING_NODE) {
		tv_err("Invalid web config %s: tls_server_config is not a mapping", cfg);
		return -EINVAL;
	}
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; !ret && p < map->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(doc, p->key));
		const char *v = scalar(yaml_document_get_node(doc, p->value));

		if (!k || !v) {
			tv_err("Invalid web config %s: tls_server_config.%s is not a plain value", cfg, k ? k : "?");
			ret = -EINVAL;
		} else if (!strcmp(k, "cert_file")) {
			cert = v;
		} else if (!strcmp(k, "key_file")) {
			key = v;
		} else if (!strcmp(k, "client_ca_file")) {
			ca = v;
		} else if (!strcmp(k, "client_auth_type")) {
			auth = v;
		} else if (!strcmp(k, "min_version")) {
			ret = tls_version(cfg, k, v, &min);
		} else if (!strcmp(k, "max_version")) {
			ret = tls_version(cfg, k, v, &max);
		} else {
			tv_err("Unsupported web config key in %s: tls_server_config.%s (cert_file, key_file, client_ca_file, client_auth_type, min_version, max_version)",
			       cfg, k);
			ret = -EINVAL;
		}
	}
	if (ret)
		return ret;
	if (!strcmp(auth, "NoClientCert"))
		verify = SSL_VERIFY_NONE;
	else if (!strcmp(auth, "VerifyClientCertIfGiven"))
		verify = SSL_VERIFY_PEER;
	else if (!strcmp(auth, "RequireAndVerifyClientCert"))
		verify = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
	else {
		tv_err("Unsupported client_auth_type in %s: \"%s\" (NoClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert)",
		       cfg, auth);
		return -EINVAL;
	}
	if (!cert || !key || (verify != SSL_VERIFY_NONE && !ca)) {
		tv_err("Invalid web config %s: tls_server_config needs cert_file and key_file%s", cfg,
		       verify != SSL_VERIFY_NONE ? ", and client_ca_file to verify clients" : "");
		return -EINVAL;
	}
	w->tls = SSL_CTX_new(TLS_server_method());
	if (!w->tls)
		return -ENOMEM;
	SSL_CTX_set_min_proto_version(w->tls, min);
	if (max)
		SSL_CTX_set_max_proto_version(w->tls, max);
	if (SSL_CTX_use_certificate_chain_file(w->tls, cert) != 1) {
		tv_err("Cannot load cert_file: path=\"%s\" (in %s): %s", cert, cfg, ssl_error());
		return -EINVAL;
	}
	if (SSL_CTX_use_PrivateKey_file(w->tls, key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(w->tls) != 1) {
		tv_err("Cannot load key_file: path=\"%s\" (in %s): %s", key, cfg, ssl_error());
		return -EINVAL;
	}
	if (ca && SSL_CTX_load_verify_locations(w->tls, ca, NULL) != 1) {
		tv_err("Cannot load client_ca_file: path=\"%s\" (in %s): %s", ca, cfg, ssl_error());
		return -EINVAL;
	}
	SSL_CTX_set_verify(w->tls, verify, NULL);
	return 0;
}

static int load_users(struct serve_web *w, const char *cfg, yaml_document_t *doc, yaml_node_t *map)
{
	if (map->type != YAML_MAPPING_NODE) {
		tv_err("Invalid web config %s: basic_auth_users is not a mapping of user: bcrypt hash", cfg);
		return -EINVAL;
	}
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *u = scalar(yaml_document_get_node(doc, p->key));
		const char *h = scalar(yaml_document_get_node(doc, p->value));

		if (!u || !h || strncmp(h, "$2", 2) || strchr(u, ':')) {
			tv_err("Invalid web config %s: basic_auth_users: \"%s\" needs a bcrypt hash ($2a$, $2b$, $2y$) and no ':' in its name",
			       cfg, u ? u : "?");
			return -EINVAL;
		}
		if (w->nr_users == MAX_USERS) {
			tv_err("Invalid web config %s: more than %d basic_auth_users", cfg, MAX_USERS);
			return -EINVAL;
		}
		w->users[w->nr_users].user = strdup(u);
		w->users[w->nr_users].hash = strdup(h);
		if (!w->users[w->nr_users++].hash || !w->users[w->nr_users - 1].user)
			return -ENOMEM;
	}
	return 0;
}

/* The document's top-level keys. */
static int load_doc(struct serve_web *w, const char *cfg, yaml_document_t *doc)
{
	yaml_node_t *root = yaml_document_get_root_node(doc);
	int ret = 0;

	if (!root)
		return 0;	/* an empty file: no TLS, no authentication */
	if (root->type != YAML_MAPPING_NODE) {
		tv_err("Invalid web config %s: not a mapping of keys", cfg);
		return -EINVAL;
	}
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; !ret && p < root->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(doc, p->key));
		yaml_node_t *v = yaml_document_get_node(doc, p->value);

		if (k && !strcmp(k, "tls_server_config"))
			ret = load_tls(w, cfg, doc, v);
		else if (k && !strcmp(k, "basic_auth_users"))
			ret = load_users(w, cfg, doc, v);
		else if (k && !strcmp(k, "bearer_token_file") && scalar(v))
			ret = read_token(cfg, scalar(v), &w->token);
		else {
			tv_err("Unsupported web config key in %s: %s (tls_server_config, basic_auth_users, bearer_token_file)",
			       cfg, k ? k : "?");
			ret = -EINVAL;
		}
	}
	return ret;
}

int serve_web_load(const char *path, struct serve_web **out)
{
	struct serve_web *w = calloc(1, sizeof(*w));
	yaml_parser_t parser;
	yaml_document_t doc;
	FILE *f = fopen(path, "re");
	int ret = 0;

	*out = NULL;
	ret = serve_dl_load();
	if (ret) {
		free(w);
		if (f)
			fclose(f);
		return ret;
	}
	if (!f || !w) {
		ret = f ? -ENOMEM : -errno;
		if (!f)
			tv_err("Cannot open web config file: path=\"%s\", errno=%d (%s)", path, -ret, strerror(-ret));
		free(w);
		if (f)
			fclose(f);
		return ret;
	}
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		tv_err("Invalid web config %s: YAML error at line %zu: %s", path, parser.problem_mark.line + 1,
		       parser.problem ? parser.problem : "?");
		ret = -EINVAL;
	} else {
		ret = load_doc(w, path, &doc);
		yaml_document_delete(&doc);
	}
	yaml_parser_delete(&parser);
	fclose(f);
	if (ret) {
		serve_web_free(w);
		return ret;
	}
	*out = w;
	return 0;
}

void serve_web_free(struct serve_web *w)
{
	if (!w)
		return;
	if (w->token)
		OPENSSL_cleanse(w->token, strlen(w->token));
	free(w->token);
	for (size_t i = 0; i < w->nr_users; i++) {
		free(w->users[i].user);
		free(w->users[i].hash);
	}
	SSL_CTX_free(w->tls);
	free(w);
}

struct ssl_ctx_st *serve_web_tls(const struct serve_web *w)
{
	return w ? w->tls : NULL;
}

static bool same(const char *a, const char *b)
{
	size_t n = strlen(a);

	return n == strlen(b) && !CRYPTO_memcmp(a, b, n);
}

/* "user:password" of a Basic credential, checked against the bcrypt hashes. */
static bool basic_ok(const struct serve_web *w, const char *b64)
{
	unsigned char dec[768];
	size_t n = strcspn(b64, " \t\r\n");
	struct crypt_data *cd;
	bool ok = false;
	char *colon;
	int len;

	if (n == 0 || n > 1000 || n % 4)
		return false;
	len = EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)n);
	if (len <= 0)
		return false;
	len -= (b64[n - 1] == '=') + (b64[n - 2] == '=');
	dec[len] = '\0';
	colon = strchr((char *)dec, ':');
	cd = colon ? calloc(1, sizeof(*cd)) : NULL;
	if (!cd)
		return false;
	*colon = '\0';
	for (size_t i = 0; i < w->nr_users && !ok; i++) {
		const char *h;

		if (strcmp(w->users[i].user, (char *)dec))
			continue;
		h = crypt_r(colon + 1, w->users[i].hash, cd);
		ok = h && h[0] != '*' && same(h, w->users[i].hash);
	}
	OPENSSL_cleanse(dec, sizeof(dec));
	free(cd);
	return ok;
}

bool serve_web_authorized(const struct serve_web *w, const char *head)
{
	if (!w || (!w->token && !w->nr_users))
		return true;
	for (const char *l = strchr(head, '\n'); l; l = strchr(l + 1, '\n')) {
		const char *v = l + 1;

		if (strncasecmp(v, "authorization:", 14))
			continue;
		v += 14 + strspn(v + 14, " \t");
		if (w->token && !strncasecmp(v, "bearer ", 7)) {
			size_t n = strcspn(v + 7, " \t\r\n");

			return n == strlen(w->token) && !CRYPTO_memcmp(v + 7, w->token, n);
		}
		if (w->nr_users && !strncasecmp(v, "basic ", 6))
			return basic_ok(w, v + 6 + strspn(v + 6, " "));
		return false;
	}
	return false;
}

const char *serve_web_challenge(const struct serve_web *w)
{
	return w && w->nr_users ? "Basic realm=\"tracevisor\"" : "Bearer realm=\"tracevisor\"";
}
