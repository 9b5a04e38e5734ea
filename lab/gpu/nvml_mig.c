/*
 * MIG (Multi-Instance GPU) for the lab's NVML stand-in. Included at the end of nvml_stub.c:
 * it uses that file's profile reader (get, parse_flat), device table and return codes.
 * Signatures, structs and return codes follow nvml.h / the NVML API reference and the
 * ctypes structs of nvidia-ml-py (pynvml.py).
 *
 * MIG data (the NVML profile, from lab/gpu/mig.yaml via lab.gpu.profile):
 *   mig.memory_slices, mig.max_devices   absent: the GPU model has no MIG, every MIG call
 *                                        answers NVML_ERROR_NOT_SUPPORTED
 *   mig.profile.<enum>.{id,name,slices,instances,memory_mb,sm,ce,dec,enc,jpeg,ofa}
 *   mig.profile.<enum>.starts ("0,2,4": placement starts), .size (memory slices it takes)
 *   mig.compute.<enum>.{id,slices}
 *   gpu.<i>.mig_pending = 1              the fault mig_pending: a mode change needs a reset
 *                                        that cannot be done now, so it stays pending
 *
 * MIG state: <folder of $BRINGUP_NVML_PROFILE>/mig-state.json, a flat JSON object. MIG mode
 * and instances outlive the process that made them (as the driver keeps them), so every MIG
 * call re-reads the file and every change rewrites it atomically (temp file + rename) while
 * holding an flock on mig-state.lock beside it. lab/gpu/tools/migstate.py reads it for the
 * nvidia-smi stand-in. Keys (<i>: NVML GPU index, <g>: GPU instance id, <c>: compute
 * instance id); absent means 0 / none:
 *   "gpu.<i>.current_mode": 0|1, "gpu.<i>.pending_mode": 0|1
 *   "gpu.<i>.gi.<g>.profile": profile id, ".start", ".size" (placement), ".name" ("1g.10gb")
 *   "gpu.<i>.gi.<g>.ci.<c>.profile": compute profile id, ".start", ".size",
 *   ".name" (the MIG device's name as nvidia-smi -L shows it: "1g.10gb", "1c.3g.40gb"),
 *   ".uuid" ("MIG-" + a UUID derived from the GPU's UUID and the two ids)
 * A new GPU instance takes the first allowed placement start that no instance overlaps
 * (memory slices), so the order of creation matters: 3g then 2g then 1g + 1g leaves no 1g
 * slot (3g@0, 2g@4, 1g@6), 1g + 1g + 2g + 3g fits (1g@0, 1g@1, 2g@2, 3g@4).
 * GPU instance ids follow the placement as on A100/H100 (0 for 7g, 1-2 for the 4-slice
 * placements, 3-6 for 2-slice, 7-14 for 1-slice ones); compute instance ids count from 0.
 */
#include <stddef.h>

#define GI_PROFILE_COUNT 0x12   /* NVML_GPU_INSTANCE_PROFILE_COUNT */
#define CI_PROFILE_COUNT 0x9    /* NVML_COMPUTE_INSTANCE_PROFILE_COUNT */
#define ENGINE_PROFILE_COUNT 1  /* NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT (SHARED only) */
#define MAX_GI 15
#define MAX_CI 8
#define NAME_LEN 96             /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define CI_NAME_LEN 48          /* a MIG device's short name: "1c.7g.141gb" */

typedef struct { unsigned int start, size; } nvmlGpuInstancePlacement_t;
typedef nvmlGpuInstancePlacement_t nvmlComputeInstancePlacement_t;
typedef struct {
    unsigned int id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount, copyEngineCount,
        decoderCount, encoderCount, jpegCount, ofaCount;
    unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;
typedef struct {
    unsigned int version, id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount, copyEngineCount,
        decoderCount, encoderCount, jpegCount, ofaCount;
    unsigned long long memorySizeMB;
    char name[NAME_LEN];
} nvmlGpuInstanceProfileInfo_v2_t;
typedef struct {
    unsigned int id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount,
        sharedEncoderCount, sharedJpegCount, sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;
typedef struct {
    unsigned int version, id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount,
        sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount;
    char name[NAME_LEN];
} nvmlComputeInstanceProfileInfo_v2_t;
/* nvml.h's NVML_STRUCT_VERSION: the size in the low bits, the version in the top byte */
#define GI_PROFILE_INFO_V2 ((unsigned int)(sizeof(nvmlGpuInstanceProfileInfo_v2_t) | (2u << 24)))
#define CI_PROFILE_INFO_V2 ((unsigned int)(sizeof(nvmlComputeInstanceProfileInfo_v2_t) | (2u << 24)))
_Static_assert(GI_PROFILE_INFO_V2 == 0x02000098u, "nvmlGpuInstanceProfileInfo_v2 as pynvml has it");
_Static_assert(CI_PROFILE_INFO_V2 == 0x02000088u, "nvmlComputeInstanceProfileInfo_v2 as pynvml has it");

/* handles: pointers into fixed tables, so a handle names (GPU, GI[, CI]) in any process */
typedef struct { char unused; } gi_handle_t;
typedef gi_handle_t *nvmlGpuInstance_t;
typedef struct { char unused; } ci_handle_t;
typedef ci_handle_t *nvmlComputeInstance_t;
static gi_handle_t gi_handles[MAX_GPUS][MAX_GI];
static ci_handle_t ci_handles[MAX_GPUS][MAX_GI][MAX_CI];
static device_t mig_devices[MAX_GPUS][MAX_GI][MAX_CI];

typedef struct {
    nvmlDevice_t device;
    unsigned int id, profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;
typedef struct {
    nvmlDevice_t device;
    nvmlGpuInstance_t gpuInstance;
    unsigned int id, profileId;
    nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

typedef struct { int used; unsigned int profile, start, size; char name[CI_NAME_LEN], uuid[48]; } ci_state_t;
typedef struct { int used, penum; unsigned int profile, start, size; char name[32]; ci_state_t ci[MAX_CI]; } gi_state_t;
typedef struct { unsigned int current, pending; gi_state_t gi[MAX_GI]; } gpu_mig_t;
static gpu_mig_t mig[MAX_GPUS];
static int lock_fd = -1;

/* ---- MIG data from the profile ------------------------------------------------------ */
static const char *mkey(const char *kind, int e, const char *field) {
    char key[96];
    snprintf(key, sizeof key, "mig.%s.%d.%s", kind, e, field);
    return get(key);
}
static unsigned int mval(const char *kind, int e, const char *field) {
    const char *v = mkey(kind, e, field);
    return v ? (unsigned int)strtoul(v, NULL, 0) : 0;
}
static unsigned int mig_slices(void) {
    const char *v = get("mig.memory_slices");
    return v ? (unsigned int)atoi(v) : 0;
}
static int penum_of(unsigned int profile_id) {
    for (int e = 0; e < GI_PROFILE_COUNT; e++)
        if (mkey("profile", e, "id") && mval("profile", e, "id") == profile_id) return e;
    return -1;
}
static int cenum_of(unsigned int profile_id) {
    for (int e = 0; e < CI_PROFILE_COUNT; e++)
        if (mkey("compute", e, "id") && mval("compute", e, "id") == profile_id) return e;
    return -1;
}
static int starts_of(int e, unsigned int *out, int max) {
    const char *s = mkey("profile", e, "starts");
    int n = 0;
    while (s && *s && n < max) {
        char *end;
        out[n++] = (unsigned int)strtoul(s, &end, 10);
        s = *end == ',' ? end + 1 : NULL;
    }
    return n;
}

/* ---- the state file ------------------------------------------------------------------- */
static void state_path(char *buf, size_t len, const char *name) {
    const char *prof = getenv("BRINGUP_NVML_PROFILE");
    const char *slash = prof ? strrchr(prof, '/') : NULL;
    if (slash) snprintf(buf, len, "%.*s/%s", (int)(slash - prof), prof, name);
    else snprintf(buf, len, "%s", name);
}

static void state_load(void) {
    char path[4096], *k[1024], *v[1024];
    int n = 0;
    memset(mig, 0, sizeof mig);
    state_path(path, sizeof path, "mig-state.json");
    char *text = read_file(path);
    if (!text) return;  /* no file yet: MIG off, no instances */
    parse_flat(text, k, v, &n, 1024);
    free(text);
    for (int i = 0; i < n; i++) {
        int g, gi, ci, end = 0;
        char field[32];
        unsigned int u = (unsigned int)strtoul(v[i], NULL, 10);
        if (sscanf(k[i], "gpu.%d.gi.%d.ci.%d.%31[a-z]%n", &g, &gi, &ci, field, &end) == 4 && !k[i][end]
            && g >= 0 && g < MAX_GPUS && gi >= 0 && gi < MAX_GI && ci >= 0 && ci < MAX_CI) {
            ci_state_t *c = &mig[g].gi[gi].ci[ci];
            c->used = 1;
            if (!strcmp(field, "profile")) c->profile = u;
            else if (!strcmp(field, "start")) c->start = u;
            else if (!strcmp(field, "size")) c->size = u;
            else if (!strcmp(field, "name")) snprintf(c->name, sizeof c->name, "%s", v[i]);
            else if (!strcmp(field, "uuid")) snprintf(c->uuid, sizeof c->uuid, "%s", v[i]);
        } else if (sscanf(k[i], "gpu.%d.gi.%d.%31[a-z]%n", &g, &gi, field, &end) == 3 && !k[i][end]
                   && g >= 0 && g < MAX_GPUS && gi >= 0 && gi < MAX_GI) {
            gi_state_t *s = &mig[g].gi[gi];
            s->used = 1;
            if (!strcmp(field, "profile")) { s->profile = u; s->penum = penum_of(u); }
            else if (!strcmp(field, "start")) s->start = u;
            else if (!strcmp(field, "size")) s->size = u;
            else if (!strcmp(field, "name")) snprintf(s->name, sizeof s->name, "%s", v[i]);
        } else if (sscanf(k[i], "gpu.%d.%31[a-z_]%n", &g, field, &end) == 2 && !k[i][end]
                   && g >= 0 && g < MAX_GPUS) {
            if (!strcmp(field, "current_mode")) mig[g].current = u;
            else if (!strcmp(field, "pending_mode")) mig[g].pending = u;
        }
    }
    for (int i = 0; i < n; i++) { free(k[i]); free(v[i]); }
}

static int state_save(void) {
    char path[4096], tmp[4200];
    state_path(path, sizeof path, "mig-state.json");
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    const char *sep = "{\n";
    for (int g = 0; g < gpu_count(); g++) {
        fprintf(f, "%s \"gpu.%d.current_mode\": %u,\n \"gpu.%d.pending_mode\": %u", sep, g, mig[g].current, g,
                mig[g].pending);
        sep = ",\n";
        for (int i = 0; i < MAX_GI; i++) {
            gi_state_t *s = &mig[g].gi[i];
            if (!s->used) continue;
            fprintf(f, ",\n \"gpu.%d.gi.%d.profile\": %u, \"gpu.%d.gi.%d.start\": %u, \"gpu.%d.gi.%d.size\": %u, "
                    "\"gpu.%d.gi.%d.name\": \"%s\"", g, i, s->profile, g, i, s->start, g, i, s->size, g, i, s->name);
            for (int c = 0; c < MAX_CI; c++) {
                ci_state_t *x = &s->ci[c];
                if (!x->used) continue;
                fprintf(f, ",\n \"gpu.%d.gi.%d.ci.%d.profile\": %u, \"gpu.%d.gi.%d.ci.%d.start\": %u, "
                        "\"gpu.%d.gi.%d.ci.%d.size\": %u, \"gpu.%d.gi.%d.ci.%d.name\": \"%s\", "
                        "\"gpu.%d.gi.%d.ci.%d.uuid\": \"%s\"", g, i, c, x->profile, g, i, c, x->start,
                        g, i, c, x->size, g, i, c, x->name, g, i, c, x->uuid);
            }
        }
    }
    fprintf(f, "%s}\n", sep[0] == '{' ? "{\n" : "\n");
    if (fclose(f) != 0 || rename(tmp, path) != 0) { unlink(tmp); return -1; }
    return 0;
}

/* a change is load + modify + save under the lock, so two processes do not lose one */
static void begin_change(void) {
    char path[4096];
    state_path(path, sizeof path, "mig-state.lock");
    lock_fd = open(path, O_CREAT | O_RDWR, 0644);
    if (lock_fd >= 0) flock(lock_fd, LOCK_EX);
    state_load();
}
static nvmlReturn_t end_change(nvmlReturn_t r, int save) {
    if (save && state_save() != 0) r = NVML_ERROR_UNKNOWN;
    if (lock_fd >= 0) close(lock_fd);  /* releases the flock */
    lock_fd = -1;
    return r;
}

/* ---- checks and handles --------------------------------------------------------------- */
static nvmlReturn_t check_mig(nvmlDevice_t d) {
    CHECK_DEV(d);
    return mig_slices() ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}
static int gi_index(nvmlGpuInstance_t h, int *g, int *i) {
    if (!initialised || !h || h < &gi_handles[0][0] || h >= &gi_handles[0][0] + MAX_GPUS * MAX_GI) return 0;
    long off = h - &gi_handles[0][0];
    *g = (int)(off / MAX_GI);
    *i = (int)(off % MAX_GI);
    return *g < gpu_count() && mig[*g].gi[*i].used;  /* after a state_load */
}
static int ci_index(nvmlComputeInstance_t h, int *g, int *i, int *c) {
    if (!initialised || !h || h < &ci_handles[0][0][0] || h >= &ci_handles[0][0][0] + MAX_GPUS * MAX_GI * MAX_CI)
        return 0;
    long off = h - &ci_handles[0][0][0];
    *g = (int)(off / (MAX_GI * MAX_CI));
    *i = (int)(off / MAX_CI % MAX_GI);
    *c = (int)(off % MAX_CI);
    return *g < gpu_count() && mig[*g].gi[*i].ci[*c].used;
}
static int is_mig_handle(nvmlDevice_t d) {
    return d && d >= &mig_devices[0][0][0] && d < &mig_devices[0][0][0] + MAX_GPUS * MAX_GI * MAX_CI;
}
static int mig_device_index(nvmlDevice_t d, int *g, int *i, int *c) {
    if (!is_mig_handle(d)) return 0;
    return ci_index(&ci_handles[0][0][0] + (d - &mig_devices[0][0][0]), g, i, c);
}

static nvmlReturn_t mig_handle_string(nvmlDevice_t d, int want_uuid, char *buf, unsigned int len) {
    int g, i, c;
    state_load();
    if (!mig_device_index(d, &g, &i, &c)) return NVML_ERROR_INVALID_ARGUMENT;
    ci_state_t *x = &mig[g].gi[i].ci[c];
    char name[160];
    const char *model = gpu_key(&devices[g], "name");
    snprintf(name, sizeof name, "%s MIG %s", model ? model : "NVIDIA", x->name);
    return copy_str(want_uuid ? x->uuid : name, buf, len);
}

static unsigned long long fnv1a(const char *s, unsigned long long h) {
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 0x100000001b3ULL; }
    /* splitmix64's finaliser: similar seeds ("/7/0", "/7/1") get unalike UUIDs */
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}
/* "MIG-" + a version-5-shaped UUID, stable for (GPU UUID, GI id, CI id) */
static void mig_uuid(int g, int gi, int ci, char *out, size_t len) {
    char seed[160];
    const char *gpu = gpu_key(&devices[g], "uuid");
    snprintf(seed, sizeof seed, "%s/%d/%d", gpu ? gpu : "", gi, ci);
    unsigned long long a = fnv1a(seed, 0xcbf29ce484222325ULL), b = fnv1a(seed, a ^ 0x9e3779b97f4a7c15ULL);
    snprintf(out, len, "MIG-%08llx-%04llx-5%03llx-%04llx-%012llx", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
             0x8000 | ((b >> 48) & 0x3fff), b & 0xffffffffffffULL);
}

/* ---- MIG mode ----------------------------------------------------------------------- */
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *currentMode, unsigned int *pendingMode) {
    nvmlReturn_t r = check_mig(d);
    if (r != NVML_SUCCESS) return r;
    if (!currentMode || !pendingMode) return NVML_ERROR_INVALID_ARGUMENT;
    state_load();
    *currentMode = mig[d->index].current;
    *pendingMode = mig[d->index].pending;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t d, unsigned int mode, nvmlReturn_t *activationStatus) {
    nvmlReturn_t r = check_mig(d);
    if (r != NVML_SUCCESS) return r;
    if (!activationStatus || mode > 1) return NVML_ERROR_INVALID_ARGUMENT;
    begin_change();
    gpu_mig_t *m = &mig[d->index];
    if (mode == 0)
        for (int i = 0; i < MAX_GI; i++)
            if (m->gi[i].used) return end_change(NVML_ERROR_IN_USE, 0);  /* destroy the instances first */
    m->pending = mode;
    *activationStatus = NVML_SUCCESS;
    const char *stuck = gpu_key(d, "mig_pending");
    if (mode != m->current && stuck && atoi(stuck))
        *activationStatus = NVML_ERROR_RESET_REQUIRED;  /* NVML's answer when it cannot reset the GPU now */
    else
        m->current = mode;
    return end_change(NVML_SUCCESS, 1);
}

/* ---- GPU instance profiles -------------------------------------------------------------- */
static nvmlReturn_t gi_profile(nvmlDevice_t d, unsigned int e, nvmlGpuInstanceProfileInfo_t *o, char *name) {
    nvmlReturn_t r = check_mig(d);
    if (r != NVML_SUCCESS) return r;
    if (!o || e >= GI_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    if (!mkey("profile", e, "id")) return NVML_ERROR_NOT_SUPPORTED;  /* no such profile on this GPU */
    o->id = mval("profile", e, "id");
    o->isP2pSupported = 0;
    o->sliceCount = mval("profile", e, "slices");
    o->instanceCount = mval("profile", e, "instances");
    o->multiprocessorCount = mval("profile", e, "sm");
    o->copyEngineCount = mval("profile", e, "ce");
    o->decoderCount = mval("profile", e, "dec");
    o->encoderCount = mval("profile", e, "enc");
    o->jpegCount = mval("profile", e, "jpeg");
    o->ofaCount = mval("profile", e, "ofa");
    o->memorySizeMB = mval("profile", e, "memory_mb");
    if (name) snprintf(name, NAME_LEN, "MIG %s", mkey("profile", e, "name"));
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t d, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t *info) {
    return gi_profile(d, profile, info, NULL);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t d, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t *info) {
    nvmlGpuInstanceProfileInfo_t v1;
    char name[NAME_LEN];
    if (info && info->version != GI_PROFILE_INFO_V2) { CHECK_DEV(d); return NVML_ERROR_ARGUMENT_VERSION_MISMATCH; }
    nvmlReturn_t r = gi_profile(d, profile, info ? &v1 : NULL, name);
    if (r != NVML_SUCCESS) return r;
    /* field by field: memorySizeMB's alignment pads the two structs differently */
    info->id = v1.id;
    info->isP2pSupported = v1.isP2pSupported;
    info->sliceCount = v1.sliceCount;
    info->instanceCount = v1.instanceCount;
    info->multiprocessorCount = v1.multiprocessorCount;
    info->copyEngineCount = v1.copyEngineCount;
    info->decoderCount = v1.decoderCount;
    info->encoderCount = v1.encoderCount;
    info->jpegCount = v1.jpegCount;
    info->ofaCount = v1.ofaCount;
    info->memorySizeMB = v1.memorySizeMB;
    snprintf(info->name, sizeof info->name, "%s", name);
    return NVML_SUCCESS;
}

static int overlaps(gpu_mig_t *m, unsigned int start, unsigned int size) {
    for (int i = 0; i < MAX_GI; i++)
        if (m->gi[i].used && start < m->gi[i].start + m->gi[i].size && m->gi[i].start < start + size) return 1;
    return 0;
}
static int count_profile(gpu_mig_t *m, unsigned int id) {
    int n = 0;
    for (int i = 0; i < MAX_GI; i++) n += m->gi[i].used && m->gi[i].profile == id;
    return n;
}
/* the free placement starts of profile enum e, the first first */
static int free_starts(gpu_mig_t *m, int e, unsigned int *out) {
    unsigned int starts[16];
    int n = starts_of(e, starts, 16), k = 0;
    if (count_profile(m, mval("profile", e, "id")) >= (int)mval("profile", e, "instances")) return 0;
    for (int j = 0; j < n; j++)
        if (!overlaps(m, starts[j], mval("profile", e, "size"))) out[k++] = starts[j];
    return k;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t d, unsigned int profileId, unsigned int *count) {
    nvmlReturn_t r = check_mig(d);
    if (r != NVML_SUCCESS) return r;
    int e = penum_of(profileId);
    if (!count || e < 0) return NVML_ERROR_INVALID_ARGUMENT;
    state_load();
    if (mig[d->index].current != 1) return NVML_ERROR_NOT_SUPPORTED;
    unsigned int starts[16];
    int n = free_starts(&mig[d->index], e, starts), left = (int)mval("profile", e, "instances")
        - count_profile(&mig[d->index], profileId);
    *count = (unsigned int)(n < left ? n : left);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t d, unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t *placements, unsigned int *count) {
    nvmlReturn_t r = check_mig(d);
    if (r != NVML_SUCCESS) return r;
    int e = penum_of(profileId);
    if (!count || e < 0) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int starts[16];
    int n = starts_of(e, starts, 16);
    if (!placements) { *count = (unsigned int)n; return NVML_SUCCESS; }  /* asking for the size */
    if (*count < (unsigned int)n) { *count = (unsigned int)n; return NVML_ERROR_INSUFFICIENT_SIZE; }
    for (int j = 0; j < n; j++) { placements[j].start = starts[j]; placements[j].size = mval("profile", e, "size"); }
    *count = (unsigned int)n;
    return NVML_SUCCESS;
}

/* ---- GPU instances ---------------------------------------------------------------------- */
/* create at the placement `want` (NULL: the first free one) */
static nvmlReturn_t create_gi(nvmlDevice_t d, unsigned int profileId, const nvmlGpuInstancePlacement_t *want,
                              nvmlGpuInstance_t *gpuInstance) {
    nvmlReturn_t r = check_mig(d);
    if (r != NVML_SUCCESS) return r;
    int e = penum_of(profileId), g = d->index;
    if (!gpuInstance || e < 0) return NVML_ERROR_INVALID_ARGUMENT;
    begin_change();
    gpu_mig_t *m = &mig[g];
    if (m->current != 1) return end_change(NVML_ERROR_NOT_SUPPORTED, 0);  /* MIG mode is not (yet) on */
    unsigned int starts[16], size = mval("profile", e, "size");
    int n = free_starts(m, e, starts);
    if (want) {
        /* a placement the profile does not allow is the caller's mistake; one taken is a lack of room */
        unsigned int all[16];
        int k = starts_of(e, all, 16), allowed = 0, free_ = 0;
        for (int j = 0; j < k; j++) allowed |= all[j] == want->start;
        for (int j = 0; j < n; j++) free_ |= starts[j] == want->start;
        if (!allowed || want->size != size) return end_change(NVML_ERROR_INVALID_ARGUMENT, 0);
        if (!free_) return end_change(NVML_ERROR_INSUFFICIENT_RESOURCES, 0);
        starts[0] = want->start;
    } else if (!n || !size) {
        return end_change(NVML_ERROR_INSUFFICIENT_RESOURCES, 0);
    }
    int id = (int)(mig_slices() / size - 1 + starts[0] / size);  /* heap numbering, as the driver's */
    if (id < 0 || id >= MAX_GI || m->gi[id].used) return end_change(NVML_ERROR_INSUFFICIENT_RESOURCES, 0);
    gi_state_t *s = &m->gi[id];
    memset(s, 0, sizeof *s);
    s->used = 1;
    s->penum = e;
    s->profile = profileId;
    s->start = starts[0];
    s->size = size;
    snprintf(s->name, sizeof s->name, "%s", mkey("profile", e, "name"));
    *gpuInstance = &gi_handles[g][id];
    return end_change(NVML_SUCCESS, 1);
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t d, unsigned int profileId, nvmlGpuInstance_t *gpuInstance) {
    return create_gi(d, profileId, NULL, gpuInstance);
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t d, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t *placement,
                                                      nvmlGpuInstance_t *gpuInstance) {
    if (!placement) return NVML_ERROR_INVALID_ARGUMENT;
    return create_gi(d, profileId, placement, gpuInstance);
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t d, unsigned int profileId, nvmlGpuInstance_t *gpuInstances,
                                       unsigned int *count) {
    nvmlReturn_t r = check_mig(d);
    if (r != NVML_SUCCESS) return r;
    if (!gpuInstances || !count || penum_of(profileId) < 0) return NVML_ERROR_INVALID_ARGUMENT;
    state_load();
    if (mig[d->index].current != 1) return NVML_ERROR_NOT_SUPPORTED;
    unsigned int n = 0;
    for (int i = 0; i < MAX_GI; i++)
        if (mig[d->index].gi[i].used && mig[d->index].gi[i].profile == profileId)
            gpuInstances[n++] = &gi_handles[d->index][i];
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t d, unsigned int id, nvmlGpuInstance_t *gpuInstance) {
    nvmlReturn_t r = check_mig(d);
    if (r != NVML_SUCCESS) return r;
    if (!gpuInstance || id >= MAX_GI) return NVML_ERROR_INVALID_ARGUMENT;
    state_load();
    if (mig[d->index].current != 1) return NVML_ERROR_NOT_SUPPORTED;
    if (!mig[d->index].gi[id].used) return NVML_ERROR_NOT_FOUND;
    *gpuInstance = &gi_handles[d->index][id];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t h, nvmlGpuInstanceInfo_t *info) {
    int g, i;
    CHECK_INIT();
    state_load();
    if (!info || !gi_index(h, &g, &i)) return NVML_ERROR_INVALID_ARGUMENT;
    info->device = &devices[g];
    info->id = (unsigned int)i;
    info->profileId = mig[g].gi[i].profile;
    info->placement.start = mig[g].gi[i].start;
    info->placement.size = mig[g].gi[i].size;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t h) {
    int g, i;
    CHECK_INIT();
    begin_change();
    if (!gi_index(h, &g, &i)) return end_change(NVML_ERROR_INVALID_ARGUMENT, 0);
    for (int c = 0; c < MAX_CI; c++)
        if (mig[g].gi[i].ci[c].used) return end_change(NVML_ERROR_IN_USE, 0);  /* compute instances first */
    memset(&mig[g].gi[i], 0, sizeof mig[g].gi[i]);
    return end_change(NVML_SUCCESS, 1);
}

/* ---- compute instances ------------------------------------------------------------------ */
static nvmlReturn_t ci_profile(nvmlGpuInstance_t h, unsigned int e, unsigned int eng,
                               nvmlComputeInstanceProfileInfo_t *o, char *name) {
    int g, i;
    CHECK_INIT();
    state_load();
    if (!o || !gi_index(h, &g, &i) || e >= CI_PROFILE_COUNT || eng >= ENGINE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    gi_state_t *s = &mig[g].gi[i];
    unsigned int cs = mval("compute", e, "slices"), gs = mval("profile", s->penum, "slices");
    /* a GPU instance offers the compute profiles no larger than itself */
    if (!mkey("compute", e, "id") || !cs || cs > gs) return NVML_ERROR_NOT_SUPPORTED;
    o->id = mval("compute", e, "id");
    o->sliceCount = cs;
    o->instanceCount = gs / cs;
    o->multiprocessorCount = mval("profile", s->penum, "sm") * cs / gs;
    o->sharedCopyEngineCount = mval("profile", s->penum, "ce");
    o->sharedDecoderCount = mval("profile", s->penum, "dec");
    o->sharedEncoderCount = mval("profile", s->penum, "enc");
    o->sharedJpegCount = mval("profile", s->penum, "jpeg");
    o->sharedOfaCount = mval("profile", s->penum, "ofa");
    /* the MIG device name: the GPU instance's for a full one, "<n>c.<gi>" for a part */
    if (name && cs == gs) snprintf(name, CI_NAME_LEN, "%s", s->name);
    else if (name) snprintf(name, CI_NAME_LEN, "%uc.%s", cs, s->name);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t h, unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t *info) {
    return ci_profile(h, profile, engProfile, info, NULL);
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_t h, unsigned int profile,
                                                           unsigned int engProfile,
                                                           nvmlComputeInstanceProfileInfo_v2_t *info) {
    nvmlComputeInstanceProfileInfo_t v1;
    char name[CI_NAME_LEN];
    CHECK_INIT();
    if (info && info->version != CI_PROFILE_INFO_V2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    nvmlReturn_t r = ci_profile(h, profile, engProfile, info ? &v1 : NULL, name);
    if (r != NVML_SUCCESS) return r;
    memcpy(&info->id, &v1, sizeof v1);  /* all unsigned ints: v1 sits right after the version */
    snprintf(info->name, sizeof info->name, "MIG %s", name);
    return NVML_SUCCESS;
}
_Static_assert(offsetof(nvmlComputeInstanceProfileInfo_v2_t, name) - offsetof(nvmlComputeInstanceProfileInfo_v2_t, id)
               == sizeof(nvmlComputeInstanceProfileInfo_t), "v1 fields sit after v2's version");

/* the compute profile enum of a compute profile id offered by GPU instance s, or -1 */
static int ci_enum_in(gi_state_t *s, unsigned int profileId) {
    int e = cenum_of(profileId);
    unsigned int cs = e < 0 ? 0 : mval("compute", e, "slices");
    return cs && cs <= mval("profile", s->penum, "slices") ? e : -1;
}

/* how many cs-slice placements inside GPU instance s are free; *first gets the lowest */
static unsigned int ci_free(gi_state_t *s, unsigned int cs, unsigned int *first) {
    unsigned int gs = mval("profile", s->penum, "slices"), n = 0;
    for (unsigned int st = 0; st + cs <= gs; st += cs) {
        int clash = 0;
        for (int c = 0; c < MAX_CI; c++)
            clash |= s->ci[c].used && st < s->ci[c].start + s->ci[c].size && s->ci[c].start < st + cs;
        if (!clash && n++ == 0 && first) *first = st;
    }
    return n;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_t h, unsigned int profileId,
                                                                unsigned int *count) {
    int g, i;
    CHECK_INIT();
    state_load();
    if (!count || !gi_index(h, &g, &i)) return NVML_ERROR_INVALID_ARGUMENT;
    gi_state_t *s = &mig[g].gi[i];
    int e = ci_enum_in(s, profileId);
    if (e < 0) return NVML_ERROR_INVALID_ARGUMENT;
    *count = ci_free(s, mval("compute", e, "slices"), NULL);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t h, unsigned int profileId,
                                                  nvmlComputeInstance_t *computeInstance) {
    int g, i, c;
    CHECK_INIT();
    begin_change();
    if (!computeInstance || !gi_index(h, &g, &i)) return end_change(NVML_ERROR_INVALID_ARGUMENT, 0);
    gi_state_t *s = &mig[g].gi[i];
    int e = ci_enum_in(s, profileId);
    if (e < 0) return end_change(NVML_ERROR_INVALID_ARGUMENT, 0);
    unsigned int cs = mval("compute", e, "slices"), start;
    for (c = 0; c < MAX_CI && s->ci[c].used; c++) {}
    if (c == MAX_CI || !ci_free(s, cs, &start)) return end_change(NVML_ERROR_INSUFFICIENT_RESOURCES, 0);
    nvmlComputeInstanceProfileInfo_t info;
    char name[CI_NAME_LEN];
    ci_profile(h, (unsigned int)e, 0, &info, name);
    ci_state_t *x = &s->ci[c];
    x->used = 1;
    x->profile = profileId;
    x->start = start;
    x->size = cs;
    snprintf(x->name, sizeof x->name, "%s", name);
    mig_uuid(g, i, c, x->uuid, sizeof x->uuid);
    *computeInstance = &ci_handles[g][i][c];
    return end_change(NVML_SUCCESS, 1);
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t h, unsigned int profileId,
                                                nvmlComputeInstance_t *computeInstances, unsigned int *count) {
    int g, i;
    CHECK_INIT();
    state_load();
    if (!computeInstances || !count || !gi_index(h, &g, &i) || ci_enum_in(&mig[g].gi[i], profileId) < 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int n = 0;
    for (int c = 0; c < MAX_CI; c++)
        if (mig[g].gi[i].ci[c].used && mig[g].gi[i].ci[c].profile == profileId)
            computeInstances[n++] = &ci_handles[g][i][c];
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t h, unsigned int id,
                                                   nvmlComputeInstance_t *computeInstance) {
    int g, i;
    CHECK_INIT();
    state_load();
    if (!computeInstance || !gi_index(h, &g, &i) || id >= MAX_CI) return NVML_ERROR_INVALID_ARGUMENT;
    if (!mig[g].gi[i].ci[id].used) return NVML_ERROR_NOT_FOUND;
    *computeInstance = &ci_handles[g][i][id];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t h) {
    int g, i, c;
    CHECK_INIT();
    begin_change();
    if (!ci_index(h, &g, &i, &c)) return end_change(NVML_ERROR_INVALID_ARGUMENT, 0);
    memset(&mig[g].gi[i].ci[c], 0, sizeof mig[g].gi[i].ci[c]);
    return end_change(NVML_SUCCESS, 1);
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t h, nvmlComputeInstanceInfo_t *info) {
    int g, i, c;
    CHECK_INIT();
    state_load();
    if (!info || !ci_index(h, &g, &i, &c)) return NVML_ERROR_INVALID_ARGUMENT;
    info->device = &devices[g];
    info->gpuInstance = &gi_handles[g][i];
    info->id = (unsigned int)c;
    info->profileId = mig[g].gi[i].ci[c].profile;
    info->placement.start = mig[g].gi[i].ci[c].start;
    info->placement.size = mig[g].gi[i].ci[c].size;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t h, nvmlComputeInstanceInfo_t *info) {
    return nvmlComputeInstanceGetInfo_v2(h, info);
}

/* ---- MIG device handles ------------------------------------------------------------------- */
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count) {
    nvmlReturn_t r = check_mig(d);
    if (r != NVML_SUCCESS) return r;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = (unsigned int)atoi(get("mig.max_devices") ? get("mig.max_devices") : "0");
    return NVML_SUCCESS;
}

/* MIG devices (one per compute instance) in GPU instance id, then compute instance id order */
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index, nvmlDevice_t *migDevice) {
    unsigned int max = 0;
    nvmlReturn_t r = nvmlDeviceGetMaxMigDeviceCount(d, &max);
    if (r != NVML_SUCCESS) return r;
    if (!migDevice || index >= max) return NVML_ERROR_INVALID_ARGUMENT;
    state_load();
    if (mig[d->index].current != 1) return NVML_ERROR_NOT_SUPPORTED;
    unsigned int n = 0;
    for (int i = 0; i < MAX_GI; i++)
        for (int c = 0; c < MAX_CI; c++)
            if (mig[d->index].gi[i].ci[c].used && n++ == index) {
                *migDevice = &mig_devices[d->index][i][c];
                return NVML_SUCCESS;
            }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t d, unsigned int *isMigDevice) {
    CHECK_INIT();
    if (!isMigDevice || (!valid(d) && !is_mig_handle(d))) return NVML_ERROR_INVALID_ARGUMENT;
    *isMigDevice = (unsigned int)is_mig_handle(d);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device) {
    int g, i, c;
    CHECK_INIT();
    state_load();
    if (!device || !mig_device_index(migDevice, &g, &i, &c)) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &devices[g];
    return NVML_SUCCESS;
}

static nvmlReturn_t mig_ids(nvmlDevice_t d, unsigned int *out, int want_ci) {
    int g, i, c;
    CHECK_INIT();
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    if (valid(d)) return NVML_ERROR_NOT_SUPPORTED;  /* a whole GPU is no MIG device */
    state_load();
    if (!mig_device_index(d, &g, &i, &c)) return NVML_ERROR_INVALID_ARGUMENT;
    *out = (unsigned int)(want_ci ? c : i);
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id) { return mig_ids(d, id, 0); }
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id) { return mig_ids(d, id, 1); }
