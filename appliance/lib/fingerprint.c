// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The fingerprint of a policy as loaded: SHA-256 (OpenSSL's libcrypto) over
 * every file the loader read, in the order it read them (the policy, then
 * its set files): each as its path, a NUL, its length (8 bytes, little
 * endian) and its bytes. The same files give the same fingerprint on any
 * machine with the same paths; a changed byte, a renamed set file or another
 * order of sets gives another.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fingerprint.h"
#include "lib/plant.h"

static void hash_file(EVP_MD_CTX *ctx, const char *name, const char *text, size_t len)
{
	uint8_t n[8];

	for (int i = 0; i < 8; i++)
		n[i] = (uint8_t)((uint64_t)len >> (8 * i));
	EVP_DigestUpdate(ctx, name, strlen(name) + 1);
	EVP_DigestUpdate(ctx, n, sizeof(n));
	EVP_DigestUpdate(ctx, text, len);
}

static int finish(EVP_MD_CTX *ctx, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (EVP_DigestFinal_ex(ctx, md, &n) != 1 || n != 32)
		return -EIO;
	for (unsigned i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/* The loader's sources are kept newest first: hashed oldest first. */
static size_t sources_in_order(const struct source *list, const struct source ***out)
{
	size_t n = 0, i;

	for (const struct source *s = list; s; s = s->next)
		n++;
	*out = calloc(n ? n : 1, sizeof(**out));
	if (!*out)
		return 0;
	i = n;
	for (const struct source *s = list; s; s = s->next)
		(*out)[--i] = s;
	return n;
}

/* A file's name under dir (dir "": as it is). */
static const char *name_under(const char *name, const char *dir)
{
	size_t n = strlen(dir);

	return n && !strncmp(name, dir, n) && name[n] == '/' ? name + n + 1 : name;
}

int fingerprint_relative(const struct source *list, const char *dir, char out[65])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	const struct source **v = NULL;
	size_t n;
	int r;

	if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(ctx);
		return -EIO;
	}
	n = sources_in_order(list, &v);
	for (size_t i = 0; i < n; i++)
		hash_file(ctx, name_under(v[i]->name, dir), v[i]->text, v[i]->len);
	r = finish(ctx, out);
	free(v);
	EVP_MD_CTX_free(ctx);
	return r;
}

int fingerprint_loaded(const struct source *list, char out[65])
{
	return fingerprint_relative(list, "", out);
}

static int read_file(const char *path, char **text, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), r = 0;

	*text = NULL;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !(*text = malloc((size_t)st.st_size + 1)))
		r = -EINVAL;
	*len = 0;
	while (!r && *len < (size_t)st.st_size) {
		ssize_t k = read(fd, *text + *len, (size_t)st.st_size - *len);

		if (k <= 0)
			break;
		*len += (size_t)k;
	}
	close(fd);
	return r;
}

int fingerprint_on_disk(const struct source *list, char out[65])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	const struct source **v = NULL;
	size_t n;
	int r = 0;

	if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(ctx);
		return -EIO;
	}
	n = sources_in_order(list, &v);
	for (size_t i = 0; i < n && !r; i++) {
		char *text = NULL;
		size_t len = 0;

		if ((r = read_file(v[i]->name, &text, &len)) == 0)
			hash_file(ctx, v[i]->name, text, len);
		free(text);
	}
	if (!r)
		r = finish(ctx, out);
	free(v);
	EVP_MD_CTX_free(ctx);
	return r;
}

/* FNV-1a over the bytes of v */
static uint64_t mix(uint64_t h, const void *v, size_t n)
{
	const unsigned char *p = v;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static uint64_t stat_sig(const struct source *list)
{
	const struct source **v = NULL;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t n = sources_in_order(list, &v);

	for (size_t i = 0; i < n; i++) {
		struct stat st;
		int e = stat(v[i]->name, &st) < 0 ? errno : 0;

		h = mix(h, v[i]->name, strlen(v[i]->name) + 1);
		h = mix(h, &e, sizeof(e));
		if (e)
			continue;
		h = mix(h, &st.st_dev, sizeof(st.st_dev));
		h = mix(h, &st.st_ino, sizeof(st.st_ino));
		h = mix(h, &st.st_size, sizeof(st.st_size));
		h = mix(h, &st.st_mtim, sizeof(st.st_mtim));
		/* (the positive control: a cache that trusts the modification time) */
		if (!planted("fp-cache-mtime-only"))
			h = mix(h, &st.st_ctim, sizeof(st.st_ctim));
	}
	free(v);
	return h;
}

int fingerprint_on_disk_cached(struct fingerprint_cache *c, const struct source *list, char out[65])
{
	uint64_t sig = stat_sig(list);

	if (!c->valid || c->sig != sig) {
		c->r = fingerprint_on_disk(list, c->fp);
		c->sig = sig;
		c->valid = true;
	}
	memcpy(out, c->fp, 65);
	return c->r;
}
