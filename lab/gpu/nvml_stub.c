/*
 * A stand-in for libnvidia-ml.so.1 for the bringup lab.
 *
 * The real pynvml loads this library through LD_LIBRARY_PATH. Every function the burn-in
 * agent calls is implemented with the real NVML signature and real return codes; the
 * values come from a flat JSON object (string keys, string or number values) in the file
 * named by BRINGUP_NVML_PROFILE, written by lab.gpu.profile. A key that is absent means
 * the device does not support the query: the call answers NVML_ERROR_NOT_SUPPORTED, as a
 * real GPU without that feature does.
 *
 * MIG (GPU and compute instances, MIG device handles) is in nvml_mig.c, included at the
 * end of this file so both share one translation unit (the profile reader, the device
 * table); its header documents the MIG profile keys and the MIG state file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/file.h>

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_TIMEOUT 10
#define NVML_ERROR_RESET_REQUIRED 16
#define NVML_ERROR_IN_USE 19
#define NVML_ERROR_INSUFFICIENT_RESOURCES 23
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define NVML_ERROR_UNKNOWN 999

#define MAX_KEYS 4096
#define MAX_GPUS 16
#define EVENT_XID 0x8ULL

static char *keys[MAX_KEYS];
static char *vals[MAX_KEYS];
static int nkeys = 0;
static int initialised = 0;

typedef struct { int index; } device_t;
typedef device_t *nvmlDevice_t;
static device_t devices[MAX_GPUS];
/* MIG device handles are another kind of nvmlDevice_t, kept in nvml_mig.c */
static int is_mig_handle(nvmlDevice_t d);
static nvmlReturn_t mig_handle_string(nvmlDevice_t d, int want_uuid, char *buf, unsigned int len);

typedef struct {
    unsigned long long registered[MAX_GPUS];
    int delivered[MAX_GPUS];
} event_set_t;
typedef event_set_t *nvmlEventSet_t;

typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
#define NVML_MEMORY_V2 0x02000028u

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

/* ---- a minimal reader for a flat JSON object ------------------------------------ */
static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
    return p;
}

static const char *read_string(const char *p, char **out) {
    /* p points at the opening quote; handles \" and \\ escapes only (what we write) */
    size_t cap = 64, n = 0;
    char *buf = malloc(cap);
    p++;
    while (*p && *p != '"') {
        char c = *p++;
        if (c == '\\' && *p) c = *p++;
        if (n + 2 > cap) { cap *= 2; buf = realloc(buf, cap); }
        buf[n++] = c;
    }
    buf[n] = 0;
    *out = buf;
    return *p == '"' ? p + 1 : NULL;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc(size + 1);
    if (fread(text, 1, size, f) != (size_t)size) { fclose(f); free(text); return NULL; }
    text[size] = 0;
    fclose(f);
    return text;
}

/* parse a flat JSON object into key/value tables (the profile, and nvml_mig.c's state) */
static int parse_flat(const char *text, char **keys, char **vals, int *nkeys, int max) {
    const char *p = skip_ws(text);
    if (*p != '{') return -1;
    p = skip_ws(p + 1);
    while (p && *p == '"' && *nkeys < max) {
        char *key, *val;
        p = read_string(p, &key);
        if (!p) break;
        p = skip_ws(p);
        if (*p != ':') { p = NULL; break; }
        p = skip_ws(p + 1);
        if (*p == '"') {
            p = read_string(p, &val);
            if (!p) break;
        } else {
            const char *start = p;
            while (*p && *p != ',' && *p != '}' && *p != ' ' && *p != '\n') p++;
            val = strndup(start, p - start);
        }
        if (strcmp(val, "null") == 0) { free(key); free(val); }
        else { keys[*nkeys] = key; vals[*nkeys] = val; (*nkeys)++; }
        p = skip_ws(p);
        if (*p == ',') p = skip_ws(p + 1);
    }
    return p ? 0 : -1;
}

static int load_profile(const char *path) {
    char *text = read_file(path);
    if (!text) return -1;
    int r = parse_flat(text, keys, vals, &nkeys, MAX_KEYS);
    free(text);
    return r;
}

static const char *get(const char *key) {
    for (int i = 0; i < nkeys; i++)
        if (strcmp(keys[i], key) == 0) return vals[i];
    return NULL;
}

static const char *gpu_key(nvmlDevice_t d, const char *field) {
    char key[160];
    snprintf(key, sizeof key, "gpu.%d.%s", d->index, field);
    return get(key);
}

static int gpu_count(void) {
    const char *v = get("gpu_count");
    int n = v ? atoi(v) : 0;
    return n > MAX_GPUS ? MAX_GPUS : n;
}

static int valid(nvmlDevice_t d) {
    return d && d >= devices && d < devices + gpu_count();
}

#define CHECK_INIT() do { if (!initialised) return NVML_ERROR_UNINITIALIZED; } while (0)
#define CHECK_DEV(d) do { CHECK_INIT(); if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)

static nvmlReturn_t copy_str(const char *v, char *buf, unsigned int len) {
    if (!v) return NVML_ERROR_NOT_SUPPORTED;
    if (!buf) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(v) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(buf, v);
    return NVML_SUCCESS;
}

static nvmlReturn_t gpu_uint(nvmlDevice_t d, const char *field, unsigned int *out) {
    CHECK_DEV(d);
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    const char *v = gpu_key(d, field);
    if (!v) return NVML_ERROR_NOT_SUPPORTED;
    *out = (unsigned int)strtoul(v, NULL, 0);
    return NVML_SUCCESS;
}

static nvmlReturn_t gpu_ull(nvmlDevice_t d, const char *field, unsigned long long *out) {
    CHECK_DEV(d);
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    const char *v = gpu_key(d, field);
    if (!v) return NVML_ERROR_NOT_SUPPORTED;
    *out = strtoull(v, NULL, 0);
    return NVML_SUCCESS;
}

/* ---- library ------------------------------------------------------------------ */
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    if (initialised) { initialised++; return NVML_SUCCESS; }
    const char *path = getenv("BRINGUP_NVML_PROFILE");
    /* no profile = no driver: the same answer a host without the kernel module gets */
    if (!path || load_profile(path) != 0) return NVML_ERROR_DRIVER_NOT_LOADED;
    for (int i = 0; i < MAX_GPUS; i++) devices[i].index = i;
    initialised = 1;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlShutdown(void) {
    CHECK_INIT();
    initialised--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient resources";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument Version Mismatch";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    CHECK_INIT();
    return copy_str(get("driver_version"), version, length);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    CHECK_INIT();
    return copy_str(get("nvml_version"), version, length);
}

static nvmlReturn_t cuda_version(int *v) {
    CHECK_INIT();
    if (!v) return NVML_ERROR_INVALID_ARGUMENT;
    const char *s = get("cuda_driver_version");
    if (!s) return NVML_ERROR_NOT_SUPPORTED;
    *v = atoi(s);
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { return cuda_version(v); }
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return cuda_version(v); }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    CHECK_INIT();
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = gpu_count();
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    CHECK_INIT();
    if (!device || index >= (unsigned int)gpu_count()) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &devices[index];
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *index) {
    CHECK_DEV(d);
    if (!index) return NVML_ERROR_INVALID_ARGUMENT;
    *index = d->index;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length) {
    if (initialised && is_mig_handle(d)) return mig_handle_string(d, 0, name, length);
    CHECK_DEV(d);
    return copy_str(gpu_key(d, "name"), name, length);
}
nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char *serial, unsigned int length) {
    CHECK_DEV(d);
    return copy_str(gpu_key(d, "serial"), serial, length);
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length) {
    if (initialised && is_mig_handle(d)) return mig_handle_string(d, 1, uuid, length);
    CHECK_DEV(d);
    return copy_str(gpu_key(d, "uuid"), uuid, length);
}
nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t d, char *version, unsigned int length) {
    CHECK_DEV(d);
    return copy_str(gpu_key(d, "vbios"), version, length);
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned int *arch) {
    return gpu_uint(d, "arch", arch);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci) {
    CHECK_DEV(d);
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    const char *bus_id = gpu_key(d, "pci_bus_id");
    if (!bus_id) return NVML_ERROR_NOT_SUPPORTED;
    memset(pci, 0, sizeof *pci);
    unsigned int dom = 0, bus = 0, dev = 0, fn = 0;
    sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn);
    pci->domain = dom;
    pci->bus = bus;
    pci->device = dev;
    const char *devid = gpu_key(d, "pci_device_id");
    pci->pciDeviceId = devid ? (unsigned int)strtoul(devid, NULL, 0) : 0;
    const char *sub = gpu_key(d, "pci_subsystem_id");
    pci->pciSubSystemId = sub ? (unsigned int)strtoul(sub, NULL, 0) : 0;
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", dom, bus, dev, fn);
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", dom, bus, dev, fn);
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_t *pci) { return nvmlDeviceGetPciInfo_v3(d, pci); }

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *mem) {
    CHECK_DEV(d);
    if (!mem) return NVML_ERROR_INVALID_ARGUMENT;
    const char *total = gpu_key(d, "memory_total");
    if (!total) return NVML_ERROR_NOT_SUPPORTED;
    mem->total = strtoull(total, NULL, 0);
    mem->used = mem->total / 200;
    mem->free = mem->total - mem->used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *mem) {
    CHECK_DEV(d);
    if (!mem) return NVML_ERROR_INVALID_ARGUMENT;
    if (mem->version != NVML_MEMORY_V2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const char *total = gpu_key(d, "memory_total");
    if (!total) return NVML_ERROR_NOT_SUPPORTED;
    mem->total = strtoull(total, NULL, 0);
    mem->reserved = mem->total / 100;
    mem->used = mem->total / 200;
    mem->free = mem->total - mem->reserved - mem->used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending) {
    CHECK_DEV(d);
    if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    const char *c = gpu_key(d, "ecc_current"), *p = gpu_key(d, "ecc_pending");
    if (!c || !p) return NVML_ERROR_NOT_SUPPORTED;
    *current = atoi(c);
    *pending = atoi(p);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int errorType, int counterType,
                                         unsigned long long *count) {
    CHECK_DEV(d);
    if (!count || errorType < 0 || errorType > 1 || counterType < 0 || counterType > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    const char *mode = gpu_key(d, "ecc_current");
    /* counters are only kept while ECC is on */
    if (!mode || atoi(mode) == 0) return NVML_ERROR_NOT_SUPPORTED;
    char field[32];
    snprintf(field, sizeof field, "ecc.%d.%d", errorType, counterType);
    const char *v = gpu_key(d, field);
    *count = v ? strtoull(v, NULL, 0) : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr, unsigned int *unc,
                                       unsigned int *pending, unsigned int *failure) {
    CHECK_DEV(d);
    if (!corr || !unc || !pending || !failure) return NVML_ERROR_INVALID_ARGUMENT;
    if (!gpu_key(d, "remap_pending")) return NVML_ERROR_NOT_SUPPORTED;
    const char *v;
    *corr = (v = gpu_key(d, "remap_corr")) ? atoi(v) : 0;
    *unc = (v = gpu_key(d, "remap_unc")) ? atoi(v) : 0;
    *pending = atoi(gpu_key(d, "remap_pending"));
    *failure = (v = gpu_key(d, "remap_failure")) ? atoi(v) : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned int *count,
                                       unsigned long long *addresses) {
    CHECK_DEV(d);
    if (!count || cause < 0 || cause > 1) return NVML_ERROR_INVALID_ARGUMENT;
    char field[32];
    snprintf(field, sizeof field, "retired_pages.%d", cause);
    const char *v = gpu_key(d, field);
    if (!v) return NVML_ERROR_NOT_SUPPORTED;
    unsigned int n = (unsigned int)atoi(v);
    if (!addresses || *count < n) { *count = n; return n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS; }
    for (unsigned int i = 0; i < n; i++) addresses[i] = 0x1000ULL * (i + 1);
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, unsigned int *pending) {
    return gpu_uint(d, "retired_pages_pending", pending);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "pcie_cur_gen", v); }
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "pcie_max_gen", v); }
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "pcie_cur_width", v); }
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "pcie_max_width", v); }
nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "pcie_replay", v); }
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *v) {
    if (sensor != 0) { CHECK_DEV(d); return NVML_ERROR_INVALID_ARGUMENT; }
    return gpu_uint(d, "temp", v);
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *v) { return gpu_uint(d, "power_mw", v); }

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *v) {
    return gpu_ull(d, "clocks_event_reasons", v);
}
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *v) {
    return gpu_ull(d, "clocks_event_reasons", v);
}
nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t d, unsigned long long *v) {
    return gpu_ull(d, "supported_clocks_event_reasons", v);
}
nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t d, unsigned long long *v) {
    return gpu_ull(d, "supported_clocks_event_reasons", v);
}

static nvmlReturn_t nvlink_field(nvmlDevice_t d, unsigned int link, const char *field, unsigned long long *out) {
    CHECK_DEV(d);
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    const char *n = gpu_key(d, "nvlink_links");
    if (!n) return NVML_ERROR_NOT_SUPPORTED;
    /* a link number the GPU does not have is an invalid argument, as on real parts */
    if (link >= (unsigned int)atoi(n)) return NVML_ERROR_INVALID_ARGUMENT;
    char key[64];
    snprintf(key, sizeof key, "nvlink.%u.%s", link, field);
    const char *v = gpu_key(d, key);
    *out = v ? strtoull(v, NULL, 0) : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, unsigned int *active) {
    unsigned long long v = 0;
    if (!active) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = nvlink_field(d, link, "down", &v);
    if (r == NVML_SUCCESS) *active = v ? 0 : 1;
    return r;
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned int link, int counter,
                                             unsigned long long *value) {
    if (counter < 0 || counter > 4) { CHECK_DEV(d); return NVML_ERROR_INVALID_ARGUMENT; }
    char field[32];
    snprintf(field, sizeof field, "err.%d", counter);
    return nvlink_field(d, link, field, value);
}

/* ---- events ---------------------------------------------------------------------- */
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    CHECK_INIT();
    if (!set) return NVML_ERROR_INVALID_ARGUMENT;
    *set = calloc(1, sizeof(event_set_t));
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *types) {
    CHECK_DEV(d);
    if (!types) return NVML_ERROR_INVALID_ARGUMENT;
    *types = 0x1ULL | 0x2ULL | EVENT_XID | 0x400ULL | 0x800ULL;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set) {
    CHECK_DEV(d);
    if (!set) return NVML_ERROR_INVALID_ARGUMENT;
    set->registered[d->index] |= types;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
    CHECK_INIT();
    if (!set || !data) return NVML_ERROR_INVALID_ARGUMENT;
    /* each injected XID is delivered once to every set registered for it */
    for (int i = 0; i < gpu_count(); i++) {
        const char *xid = gpu_key(&devices[i], "xid");
        if (xid && (set->registered[i] & EVENT_XID) && !set->delivered[i]) {
            set->delivered[i] = 1;
            memset(data, 0, sizeof *data);
            data->device = &devices[i];
            data->eventType = EVENT_XID;
            data->eventData = strtoull(xid, NULL, 0);
            data->gpuInstanceId = 0xFFFFFFFFu;
            data->computeInstanceId = 0xFFFFFFFFu;
            return NVML_SUCCESS;
        }
    }
    usleep((useconds_t)timeoutms * 1000);
    return NVML_ERROR_TIMEOUT;
}
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
    return nvmlEventSetWait_v2(set, data, timeoutms);
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    CHECK_INIT();
    if (!set) return NVML_ERROR_INVALID_ARGUMENT;
    free(set);
    return NVML_SUCCESS;
}

#include "nvml_mig.c"
