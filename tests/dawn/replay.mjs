// Replays recorded wgpu-posenc compute dispatches on Dawn (npm `webgpu`, i.e. dawn.node) and checks
// the results. Dawn enforces WebGPU validation that wgpu's native backends skip (for example
// writable storage binding aliasing), so every validation / OOM / internal / uncaptured error of a
// call is a FAIL. Usage: node replay.mjs <capture_dir>   (see README.md for the capture format)
// Exit: 0 every call passed (SKIPs allowed), 1 some call failed, 2 setup error (no adapter, bad capture).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const INSTALL_HINT =
  'Dawn needs a Vulkan driver: on Debian 12 `apt-get install chromium libvulkan1` (SwiftShader ships in\n' +
  '/usr/lib/chromium) and `npm ci --prefix tests/dawn`; run via tests/dawn/run.sh, which sets\n' +
  'VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json (Dawn rejects Debian 12\'s lavapipe).';
const WGSL_ENABLE_FEATURES = { f16: 'shader-f16', subgroups: 'subgroups' };
const DTYPES = { f32: 4, u32: 4, f16: 2, bf16: 2 };
const MAX_MISMATCHES_SHOWN = 5;

function die(msg) {
  console.error(`dawn replay: ${msg}`);
  process.exit(2);
}

let webgpu;
try {
  webgpu = await import('webgpu');
} catch (e) {
  die(`cannot load the npm package webgpu (${e.message}).\n${INSTALL_HINT}`);
}
const { create, globals } = webgpu;
Object.assign(globalThis, globals);

// dawn.node tears the whole implementation down once the object `create` returns is collected, and
// devices still alive then crash the process: keep it in a module-level binding until exit.
const GPU = create([]);

const captureDir = process.argv[2];
if (!captureDir) die('usage: node replay.mjs <capture_dir>');
let manifest;
try {
  manifest = JSON.parse(readFileSync(join(captureDir, 'manifest.json'), 'utf8'));
} catch (e) {
  die(`cannot read ${join(captureDir, 'manifest.json')}: ${e.message}`);
}
const readBin = (name) => readFileSync(join(captureDir, name));

const adapter = await GPU.requestAdapter();
if (!adapter) die(`no WebGPU adapter found.\n${INSTALL_HINT}`);
const ai = adapter.info;
console.log(`adapter: vendor=${ai.vendor} architecture=${ai.architecture} device=${ai.device} ` +
  `description=${JSON.stringify(ai.description)} fallback=${ai.isFallbackAdapter}`);

const wanted = manifest.features ?? [];
const requiredFeatures = wanted.filter((f) => adapter.features.has(f));
const missing = wanted.filter((f) => !adapter.features.has(f));
if (missing.length) console.log(`adapter lacks features: ${missing.join(', ')} (calls needing them are skipped)`);
const requiredLimits = {};
for (const k of ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxStorageBuffersPerShaderStage']) {
  requiredLimits[k] = adapter.limits[k];
}
let device;
try {
  device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
} catch (e) {
  die(`requestDevice failed: ${e.message}`);
}

let callErrors = []; // errors reported outside the error scopes (uncaptured, device lost)
device.onuncapturederror = (ev) => callErrors.push(`uncaptured ${ev.error.constructor.name}: ${ev.error.message}`);
let deviceLost = null;
let exiting = false;
device.lost.then((info) => { if (!exiting) deviceLost = `device lost (${info.reason}): ${info.message}`; });

const SCOPES = ['validation', 'out-of-memory', 'internal'];
async function scoped(fn) {
  for (const s of SCOPES) device.pushErrorScope(s);
  let thrown = null;
  try { await fn(); } catch (e) { thrown = `exception: ${e.message}`; }
  const errs = [];
  for (const s of [...SCOPES].reverse()) {
    const e = await device.popErrorScope();
    if (e) errs.push(`${s} error: ${e.message}`);
  }
  if (thrown) errs.push(thrown);
  return errs;
}

// One bind group layout per kernel family (manifest.layouts); each pipeline names its own.
const bindGroupLayouts = [], pipelineLayouts = [];
const layoutErrors = await scoped(() => {
  manifest.layouts.forEach((layout, i) => {
    const bgl = device.createBindGroupLayout({
      label: `capture layout ${i}`,
      entries: layout.map((e) => ({ binding: e.binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: e.type } })),
    });
    bindGroupLayouts.push(bgl);
    pipelineLayouts.push(device.createPipelineLayout({ label: `capture pipeline layout ${i}`, bindGroupLayouts: [bgl] }));
  });
});

// Pipelines are built on first use: {pipeline} | {skip: reason} | {error: message}.
const pipelineCache = new Map();
async function getPipeline(idx) {
  if (pipelineCache.has(idx)) return pipelineCache.get(idx);
  const p = manifest.pipelines[idx];
  let result;
  if (!p) result = { error: `pipeline ${idx} not in manifest` };
  else {
    const code = readBin(p.wgsl).toString('utf8');
    const enables = [...code.matchAll(/^\s*enable\s+([^;]+);/gm)].flatMap((m) => m[1].split(',').map((s) => s.trim()));
    const lacking = enables.map((e) => WGSL_ENABLE_FEATURES[e]).filter((f) => f && !device.features.has(f));
    if (lacking.length) result = { skip: `${p.wgsl} needs ${lacking.join(', ')}, which the adapter lacks` };
    else {
      let pipeline, compileMsgs = [];
      const errs = await scoped(async () => {
        const module = device.createShaderModule({ label: p.wgsl, code });
        const info = await module.getCompilationInfo();
        compileMsgs = info.messages.filter((m) => m.type === 'error')
          .map((m) => `${p.wgsl}:${m.lineNum}:${m.linePos}: ${m.message}`);
        const constants = Object.fromEntries(Object.entries(p.constants ?? {}).map(([k, v]) => [k, Number(v)]));
        pipeline = device.createComputePipeline({
          label: `p${idx} ${p.wgsl}`, layout: pipelineLayouts[p.layout], compute: { module, entryPoint: p.entry, constants },
        });
      });
      // A scope error already quotes the compiler message; the compilation info is the fallback.
      const msgs = errs.length ? errs : compileMsgs;
      result = msgs.length ? { error: msgs.join(' | ') } : { pipeline };
    }
  }
  pipelineCache.set(idx, result);
  return result;
}

function decoder(dtype, bytes) {
  const n = bytes.byteLength / DTYPES[dtype];
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const f32 = new DataView(new ArrayBuffer(4));
  const bits = DTYPES[dtype] === 4 ? (i) => dv.getUint32(4 * i, true) : (i) => dv.getUint16(2 * i, true);
  const value = {
    f32: (i) => dv.getFloat32(4 * i, true),
    u32: (i) => dv.getUint32(4 * i, true),
    bf16: (i) => (f32.setUint32(0, dv.getUint16(2 * i, true) << 16), f32.getFloat32(0)),
    f16: (i) => {
      const h = dv.getUint16(2 * i, true), s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
      if (e === 0) return s * m * 2 ** -24;
      if (e === 31) return m ? NaN : s * Infinity;
      return s * (1 + m / 1024) * 2 ** (e - 15);
    },
  }[dtype];
  return { n, bits, value };
}

// Returns {maxErr, count, mismatches: the first few [{i, kind, got, exp, gb, eb}]} or {problem}.
function compare(check, gotBytes, expBytes) {
  const dt = check.dtype;
  if (!DTYPES[dt]) return { problem: `unknown dtype ${dt}` };
  if (expBytes.byteLength !== gotBytes.byteLength)
    return { problem: `${check.expect} has ${expBytes.byteLength} bytes, buffer has ${gotBytes.byteLength}` };
  const got = decoder(dt, gotBytes), exp = decoder(dt, expBytes);
  const covered = new Uint8Array(got.n);
  const res = { maxErr: 0, mismatches: [], count: 0 };
  const bad = (i, kind) => {
    res.count++;
    if (res.mismatches.length < MAX_MISMATCHES_SHOWN) res.mismatches.push({ i, kind, got: got.value(i), exp: exp.value(i), gb: got.bits(i), eb: exp.bits(i) });
  };
  for (const [first, end, absTol, relTol] of check.tolerance ?? []) {
    if (!(first >= 0 && end <= got.n && first <= end)) return { problem: `tolerance range [${first}, ${end}) outside 0..${got.n}` };
    for (let i = first; i < end; i++) {
      covered[i] = 1;
      const g = got.value(i), e = exp.value(i);
      if (Number.isNaN(g) || Number.isNaN(e)) { bad(i, 'NaN'); res.nan = true; continue; }
      if (g === e) continue;
      const err = Math.abs(g - e);
      if (err > res.maxErr) res.maxErr = err;
      if (!(err <= absTol + relTol * Math.abs(e))) bad(i, 'tol');
    }
  }
  for (let i = 0; i < got.n; i++) if (!covered[i] && got.bits(i) !== exp.bits(i)) bad(i, 'bits');
  if (res.nan) res.maxErr = NaN; // reported as max_abs_err=NaN
  return res;
}

async function runCall(call) {
  const used = [...new Set(call.passes.flatMap((p) => p.dispatches.map((d) => d.pipeline)))];
  const pipes = {};
  const errors = [];
  for (const idx of used) {
    const r = await getPipeline(idx);
    if (r.skip) return { status: 'SKIP', errors: [r.skip] };
    if (r.error) errors.push(`pipeline ${idx}: ${r.error}`);
    pipes[idx] = r.pipeline;
  }
  if (errors.length) return { status: 'FAIL', errors };

  const buffers = new Map();
  const staging = [];
  callErrors = [];
  errors.push(...await scoped(() => {
    for (const b of call.buffers) {
      const buf = device.createBuffer({
        label: `${call.name} buffer ${b.id}`, size: b.size,
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
      });
      buffers.set(b.id, buf);
      if (b.init) {
        const data = readBin(b.init);
        if (data.byteLength !== b.size) throw new Error(`${b.init} has ${data.byteLength} bytes, buffer ${b.id} has size ${b.size}`);
        device.queue.writeBuffer(buf, 0, data);
      }
    }
    const enc = device.createCommandEncoder({ label: call.name });
    call.passes.forEach((pass, pi) => {
      const cp = enc.beginComputePass({ label: `${call.name} pass ${pi}` });
      pass.dispatches.forEach((d, di) => {
        cp.setPipeline(pipes[d.pipeline]);
        cp.setBindGroup(0, device.createBindGroup({
          label: `${call.name} pass ${pi} dispatch ${di}`, layout: bindGroupLayouts[manifest.pipelines[d.pipeline].layout],
          entries: d.bindings.map((b) => {
            const buffer = buffers.get(b.buffer);
            if (!buffer) throw new Error(`dispatch ${pi}.${di} binds unknown buffer ${b.buffer}`);
            return { binding: b.binding, resource: { buffer, offset: b.offset ?? 0, size: b.size } };
          }),
        }));
        const [x, y = 1, z = 1] = d.workgroups;
        cp.dispatchWorkgroups(x, y, z);
      });
      cp.end();
    });
    device.queue.submit([enc.finish()]);
    // Read-back copies go in their own submit so a failed call still shows what the buffers hold.
    const rb = device.createCommandEncoder({ label: `${call.name} readback` });
    for (const c of call.checks ?? []) {
      const src = buffers.get(c.buffer);
      if (!src) throw new Error(`check of unknown buffer ${c.buffer}`);
      const dst = device.createBuffer({ label: `${call.name} readback ${c.buffer}`, size: src.size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      rb.copyBufferToBuffer(src, 0, dst, 0, src.size);
      staging.push({ check: c, dst });
    }
    device.queue.submit([rb.finish()]);
  }));

  let maxErr; // over tolerance ranges; stays undefined when the call has none
  const details = [];
  for (const { check, dst } of staging) {
    try {
      await dst.mapAsync(GPUMapMode.READ);
    } catch (e) {
      errors.push(`mapping buffer ${check.buffer} failed: ${e.message}`);
      continue;
    }
    const got = new Uint8Array(dst.getMappedRange().slice(0));
    dst.unmap();
    let r;
    try { r = compare(check, got, readBin(check.expect)); } catch (e) { r = { problem: e.message }; }
    if (r.problem) { errors.push(`check buffer ${check.buffer}: ${r.problem}`); continue; }
    if ((check.tolerance ?? []).length) maxErr = Math.max(maxErr ?? 0, r.maxErr);
    if (r.count) {
      errors.push(`check buffer ${check.buffer} (${check.dtype}): ${r.count} mismatching elements`);
      for (const m of r.mismatches) {
        const hex = (v) => '0x' + v.toString(16).padStart(DTYPES[check.dtype] * 2, '0');
        details.push(`    buffer ${check.buffer} [${m.i}] ${m.kind}: got ${m.got} (${hex(m.gb)}) expected ${m.exp} (${hex(m.eb)})`);
      }
    }
  }
  await device.queue.onSubmittedWorkDone();
  errors.push(...callErrors);
  if (deviceLost) errors.push(deviceLost);
  for (const b of [...buffers.values(), ...staging.map((s) => s.dst)]) b.destroy();
  return { status: errors.length ? 'FAIL' : 'OK', errors, maxErr, details };
}

const counts = { OK: 0, FAIL: 0, SKIP: 0 };
const calls = manifest.calls ?? [];
if (!calls.length) console.log('capture has no calls: nothing was checked');
for (const [ci, call] of calls.entries()) {
  const label = `[${ci + 1}/${calls.length}] ${call.name}`;
  let r;
  if (layoutErrors.length) r = { status: 'FAIL', errors: [`bind group layout: ${layoutErrors.join(' | ')}`] };
  else if (deviceLost) r = { status: 'FAIL', errors: [deviceLost] };
  else {
    try { r = await runCall(call); } catch (e) { r = { status: 'FAIL', errors: [`exception: ${e.stack ?? e}`] }; }
  }
  counts[r.status]++;
  const err = r.status === 'SKIP' ? '' : ` max_abs_err=${r.maxErr === undefined ? '-' : r.maxErr.toExponential(3)}`;
  const msgs = r.errors.map((m) => m.replace(/\s*\n\s*/g, ' ').trim()).join(' | ');
  console.log(`${label}: ${r.status}${err}${msgs ? ' -- ' + msgs : ''}`);
  for (const d of r.details ?? []) console.log(d);
}
console.log(`replay: ${counts.OK} passed, ${counts.FAIL} failed, ${counts.SKIP} skipped`);
exiting = true;
device.destroy();
process.exit(counts.FAIL || calls.length === 0 ? 1 : 0);
