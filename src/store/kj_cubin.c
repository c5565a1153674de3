#include "kj_cubin.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "kj_error.h"

#define FATBIN_MAGIC 0xBA55ED50u

static int is_elf64(const unsigned char *p, size_t n)
{
	return n >= 64 && p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F' && p[4] == 2;
}

const char *kj_cubin_format(const void *image, size_t bytes)
{
	const unsigned char *p = image;
	uint32_t magic;
	if (is_elf64(p, bytes))
		return "cubin";
	if (bytes >= 4) {
		memcpy(&magic, p, 4);
		if (magic == FATBIN_MAGIC)
			return "fatbin";
	}
	if (bytes >= 8 && (memcmp(p, "//", 2) == 0 || memcmp(p, ".vers", 5) == 0))
		return "ptx";
	return "unknown";
}

/* Symbols of one ELF64 image; every read is bounds-checked against n. */
static int elf_functions(const unsigned char *p, size_t n, void (*fn)(const char *, void *), void *ud)
{
	uint64_t shoff;
	uint16_t shentsize, shnum;
	int found = 0;
	if (!is_elf64(p, n))
		return KJ_EINVAL;
	memcpy(&shoff, p + 0x28, 8);
	memcpy(&shentsize, p + 0x3A, 2);
	memcpy(&shnum, p + 0x3C, 2);
	if (shentsize < 64 || shoff > n || (uint64_t)shnum * shentsize > n - shoff)
		return KJ_EINVAL;
	for (uint16_t i = 0; i < shnum; i++) {
		const unsigned char *sh = p + shoff + (uint64_t)i * shentsize;
		uint32_t type, link;
		uint64_t off, size, entsize;
		memcpy(&type, sh + 4, 4);
		if (type != 2 /* SHT_SYMTAB */)
			continue;
		memcpy(&off, sh + 0x18, 8);
		memcpy(&size, sh + 0x20, 8);
		memcpy(&link, sh + 0x28, 4);
		memcpy(&entsize, sh + 0x38, 8);
		if (entsize < 24 || off > n || size > n - off || link >= shnum)
			continue;
		const unsigned char *strsh = p + shoff + (uint64_t)link * shentsize;
		uint64_t stroff, strsize;
		memcpy(&stroff, strsh + 0x18, 8);
		memcpy(&strsize, strsh + 0x20, 8);
		if (stroff > n || strsize > n - stroff)
			continue;
		for (uint64_t s = 0; s + entsize <= size; s += entsize) {
			const unsigned char *sym = p + off + s;
			uint32_t name;
			memcpy(&name, sym, 4);
			if ((sym[4] & 0xf) != 2 /* STT_FUNC */ || name >= strsize)
				continue;
			const char *str = (const char *)p + stroff + name;
			if (!memchr(str, 0, strsize - name) || !*str)
				continue;
			fn(str, ud);
			found++;
		}
	}
	return found;
}

int kj_cubin_functions(const void *image, size_t bytes, void (*fn)(const char *name, void *ud), void *ud)
{
	const unsigned char *p = image;
	uint32_t magic;
	uint16_t hsize;
	uint64_t fsize;
	int found = 0;
	if (is_elf64(p, bytes))
		return elf_functions(p, bytes, fn, ud);
	if (bytes < 16)
		return KJ_EINVAL;
	memcpy(&magic, p, 4);
	if (magic != FATBIN_MAGIC)
		return KJ_EINVAL;
	/* fatbin: {magic u32, version u16, header size u16, payload size u64}, then entries
	 * {kind u16 (1 PTX, 2 ELF), version u16, header size u32, payload size u64, u32 u32,
	 * version u16 u16, arch u32 (0x1c), name offset and length u32 u32, flags u64 (0x28)}. */
	memcpy(&hsize, p + 6, 2);
	memcpy(&fsize, p + 8, 8);
	if (hsize < 16 || hsize > bytes)
		return KJ_EINVAL;
	size_t pos = hsize, end = bytes;
	if (fsize < bytes - hsize)
		end = hsize + fsize;
	while (pos + 16 <= end) {
		uint16_t kind;
		uint32_t ehsize;
		uint64_t esize, flags = 0;
		memcpy(&kind, p + pos, 2);
		memcpy(&ehsize, p + pos + 4, 4);
		memcpy(&esize, p + pos + 8, 8);
		if (ehsize < 16 || ehsize > end - pos || esize > end - pos - ehsize)
			break;
		if (ehsize >= 0x30)
			memcpy(&flags, p + pos + 0x28, 8);
		if (kind == 2 && !(flags & 0x2000)) {
			int r = elf_functions(p + pos + ehsize, esize, fn, ud);
			if (r > 0)
				found += r;
		}
		pos += ehsize + esize;
	}
	return found;
}

/* One section header's fields, bounds-checked: 0 when it lies inside the image. */
struct elf_sec {
	uint32_t name, type, link;
	uint64_t off, size, entsize;
};

static int elf_sec(const unsigned char *p, size_t n, uint64_t shoff, uint16_t shentsize, uint16_t i,
		   struct elf_sec *s)
{
	const unsigned char *sh = p + shoff + (uint64_t)i * shentsize;
	memcpy(&s->name, sh, 4);
	memcpy(&s->type, sh + 4, 4);
	memcpy(&s->off, sh + 0x18, 8);
	memcpy(&s->size, sh + 0x20, 8);
	memcpy(&s->link, sh + 0x28, 4);
	memcpy(&s->entsize, sh + 0x38, 8);
	return s->off <= n && s->size <= n - s->off ? 0 : -1;
}

/* The NUL-terminated string at off of a string section, or NULL. */
static const char *elf_str(const unsigned char *p, const struct elf_sec *str, uint32_t off)
{
	if (off >= str->size)
		return NULL;
	const char *s = (const char *)p + str->off + off;
	return memchr(s, 0, str->size - off) ? s : NULL;
}

/* .nv.info holds {format u8, attribute u8, size u16, value}; EIFMT_SVAL (4) entries carry size
 * bytes of value, the others none. REGCOUNT (0x2f): {symbol u32, registers u32}; KPARAM_INFO
 * (0x17): {index u32, ordinal u16, offset u16, flags u32 whose bits 18..31 are the size};
 * REQNTID (0x10, PTX .reqntid, which Triton emits): {x u32, y u32, z u32}. */
static void nv_info_walk(const unsigned char *v, uint64_t size, int *regs, uint32_t nsyms, uint32_t *param_end,
			 uint32_t *reqntid)
{
	for (uint64_t off = 0; off + 4 <= size;) {
		uint8_t fmt = v[off], attr = v[off + 1];
		uint16_t len;
		memcpy(&len, v + off + 2, 2);
		if (fmt != 4) {
			off += 4;
			continue;
		}
		if (off + 4 + len > size)
			break;
		if (attr == 0x2f && regs && len >= 8) {
			uint32_t sym, count;
			memcpy(&sym, v + off + 4, 4);
			memcpy(&count, v + off + 8, 4);
			if (sym < nsyms)
				regs[sym] = (int)count;
		} else if (attr == 0x10 && reqntid && len >= 12) {
			memcpy(reqntid, v + off + 4, 12);
		} else if (attr == 0x17 && param_end && len >= 12) {
			uint16_t poff;
			uint32_t flags;
			memcpy(&poff, v + off + 10, 2);
			memcpy(&flags, v + off + 12, 4);
			uint32_t end = poff + ((flags >> 18) & 0x3fff);
			if (end > *param_end)
				*param_end = end;
		}
		off += 4 + (uint64_t)len;
	}
}

int kj_cubin_function_facts(const void *image, size_t bytes, void (*fn)(const struct kj_cubin_fn *f, void *ud),
			    void *ud)
{
	const unsigned char *p = image;
	uint64_t shoff;
	uint16_t shentsize, shnum, shstrndx;
	struct elf_sec shstr, symtab, strtab, s;
	int have_sym = 0, found = 0;
	if (!is_elf64(p, bytes))
		return KJ_EINVAL;
	memcpy(&shoff, p + 0x28, 8);
	memcpy(&shentsize, p + 0x3A, 2);
	memcpy(&shnum, p + 0x3C, 2);
	memcpy(&shstrndx, p + 0x3E, 2);
	if (shentsize < 64 || shoff > bytes || (uint64_t)shnum * shentsize > bytes - shoff || shstrndx >= shnum ||
	    elf_sec(p, bytes, shoff, shentsize, shstrndx, &shstr))
		return KJ_EINVAL;
	for (uint16_t i = 0; i < shnum && !have_sym; i++)
		if (!elf_sec(p, bytes, shoff, shentsize, i, &symtab) && symtab.type == 2 && symtab.entsize >= 24 &&
		    symtab.link < shnum && !elf_sec(p, bytes, shoff, shentsize, (uint16_t)symtab.link, &strtab))
			have_sym = 1;
	if (!have_sym)
		return 0;
	uint32_t nsyms = (uint32_t)(symtab.size / symtab.entsize);
	int *regs = malloc((nsyms ? nsyms : 1) * sizeof(*regs));
	if (!regs)
		return KJ_ENOMEM;
	for (uint32_t k = 0; k < nsyms; k++)
		regs[k] = -1;
	for (uint16_t i = 0; i < shnum; i++) /* the global .nv.info: registers by symbol */
		if (!elf_sec(p, bytes, shoff, shentsize, i, &s)) {
			const char *name = elf_str(p, &shstr, s.name);
			if (name && !strcmp(name, ".nv.info"))
				nv_info_walk(p + s.off, s.size, regs, nsyms, NULL, NULL);
		}
	for (uint32_t k = 0; k < nsyms; k++) {
		const unsigned char *sym = p + symtab.off + (uint64_t)k * symtab.entsize;
		uint32_t name_off;
		memcpy(&name_off, sym, 4);
		const char *name = (sym[4] & 0xf) == 2 /* STT_FUNC */ ? elf_str(p, &strtab, name_off) : NULL;
		if (!name || !*name)
			continue;
		struct kj_cubin_fn f = {name, regs[k], 0, {0, 0, 0}};
		for (uint16_t i = 0; i < shnum; i++) { /* .nv.info.<name>: its parameters */
			const char *sn;
			if (!elf_sec(p, bytes, shoff, shentsize, i, &s) && (sn = elf_str(p, &shstr, s.name)) &&
			    !strncmp(sn, ".nv.info.", 9) && !strcmp(sn + 9, name))
				nv_info_walk(p + s.off, s.size, NULL, 0, &f.param_bytes, f.reqntid);
		}
		fn(&f, ud);
		found++;
	}
	free(regs);
	return found;
}

unsigned char *kj_cubin_image(const char *codec, const void *data, size_t len, size_t bytes, size_t *out_len,
			      const char **why)
{
	int zstd = codec && !strcmp(codec, "zstd");
	unsigned long long size = len;
	if (zstd) {
		size = ZSTD_getFrameContentSize(data, len);
		if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
			size = bytes;
		} else if (bytes && size != bytes) {
			/* a damaged frame (or row): never allocate what it claims */
			*why = "the compressed image's size is not its row's";
			return NULL;
		}
	}
	unsigned char *img = malloc(size + 1);
	if (!img) {
		*why = "out of memory";
		return NULL;
	}
	if (zstd) {
		size_t got = ZSTD_decompress(img, size, data, len);
		if (ZSTD_isError(got)) {
			*why = ZSTD_getErrorName(got);
			free(img);
			return NULL;
		}
		size = got;
	} else if (len) {
		memcpy(img, data, len);
	}
	img[size] = '\0';
	*out_len = size;
	return img;
}
