//! Every shader passes naga validation and translates to SPIR-V (Vulkan), MSL (Metal), HLSL
//! (DX12) and GLSL (GL), so the backends this machine lacks are compiled too: every pair
//! kernel variant, and the roofline's identity shader. Also: the WGSL built-in sine and
//! cosine appear nowhere (the accuracy contract).
#![cfg(not(target_arch = "wasm32"))]

use naga::back::PipelineConstants;
use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};
use naga::{Expression, MathFunction as M};
use wgpu_posenc::Dtype;
use wgpu_posenc::kernels::{Op, Specialization};

/// Parses and validates `source`, then applies the override `constants`.
fn compile(source: &str, constants: &[(&str, f64)], what: &str) -> (naga::Module, ModuleInfo) {
    let module = naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(source)));
    let info = Validator::new(ValidationFlags::all(), Capabilities::all())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(source)));
    let constants: PipelineConstants = constants
        .iter()
        .map(|&(name, value)| (name.to_string(), value))
        .collect();
    let entry = Some((naga::ShaderStage::Compute, "main"));
    let (module, info) =
        naga::back::pipeline_constants::process_overrides(&module, &info, entry, &constants)
            .unwrap_or_else(|e| panic!("{what}: overrides: {e}"));
    (module.into_owned(), info.into_owned())
}

fn compile_variant(spec: &Specialization) -> (naga::Module, ModuleInfo) {
    compile(&spec.naga_source(), &spec.constants(), &format!("{spec:?}"))
}

fn identity() -> (naga::Module, ModuleInfo) {
    compile(
        include_str!("../shaders/identity.wgsl"),
        &[],
        "identity.wgsl",
    )
}

/// Translates a compiled module for every backend; GLSL only when `glsl` (it has no f16
/// and no subgroups).
fn translate(module: &naga::Module, info: &ModuleInfo, glsl: bool, what: &str) {
    let spv = naga::back::spv::write_vec(module, info, &Default::default(), None)
        .unwrap_or_else(|e| panic!("{what}: SPIR-V: {e}"));
    assert_eq!(spv[0], 0x0723_0203, "SPIR-V magic");

    let msl_pipeline = naga::back::msl::PipelineOptions {
        entry_point: Some((naga::ShaderStage::Compute, "main".into())),
        ..Default::default()
    };
    let msl_options = naga::back::msl::Options {
        lang_version: (2, 1),
        ..Default::default()
    };
    let (msl, _) = naga::back::msl::write_string(module, info, &msl_options, &msl_pipeline)
        .unwrap_or_else(|e| panic!("{what}: MSL: {e}"));
    assert!(msl.contains("kernel void"));

    let hlsl_options = naga::back::hlsl::Options {
        // f16 needs shader model 6.2; DX12 with DXC has it.
        shader_model: naga::back::hlsl::ShaderModel::V6_2,
        ..Default::default()
    };
    let hlsl_pipeline = naga::back::hlsl::PipelineOptions {
        entry_point: Some((naga::ShaderStage::Compute, "main".into())),
    };
    let mut hlsl = String::new();
    naga::back::hlsl::Writer::new(&mut hlsl, &hlsl_options, &hlsl_pipeline)
        .write(module, info, None)
        .unwrap_or_else(|e| panic!("{what}: HLSL: {e}"));
    // 64 invocations a workgroup; the QK-norm kernel's workgroup is one token's.
    let size = module.entry_points[0].workgroup_size[0];
    assert!(
        size == 64 || (size.is_power_of_two() && size < 64),
        "{what}: {size}"
    );
    assert!(
        hlsl.contains(&format!("[numthreads({size}, 1, 1)]")),
        "{what}"
    );

    if glsl {
        let glsl_options = naga::back::glsl::Options {
            version: naga::back::glsl::Version::Embedded {
                version: 310,
                is_webgl: false,
            },
            ..Default::default()
        };
        let glsl_pipeline = naga::back::glsl::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: "main".into(),
            multiview: None,
        };
        let mut glsl = String::new();
        naga::back::glsl::Writer::new(
            &mut glsl,
            module,
            info,
            &glsl_options,
            &glsl_pipeline,
            naga::proc::BoundsCheckPolicies::default(),
        )
        .and_then(|mut w| w.write())
        .unwrap_or_else(|e| panic!("{what}: GLSL: {e}"));
        assert!(
            glsl.contains(&format!("layout(local_size_x = {size}")),
            "{what}"
        );
    }
}

/// The math built-ins a module uses.
fn math_functions(module: &naga::Module) -> Vec<M> {
    module
        .functions
        .iter()
        .map(|(_, f)| f)
        .chain(module.entry_points.iter().map(|e| &e.function))
        .flat_map(|f| f.expressions.iter())
        .filter_map(|(_, expr)| match expr {
            Expression::Math { fun, .. } => Some(*fun),
            _ => None,
        })
        .collect()
}

/// Whether the variant adds through subgroups (GL has none: `Features::SUBGROUP` is
/// absent there, so such a variant is never built for it).
fn uses_subgroups(spec: &Specialization) -> bool {
    matches!(
        spec.op,
        Op::Fused {
            subgroups: true,
            ..
        }
    )
}

/// Whether the variant stores f16 (the tensor, or the fused kernel's KV cache).
fn uses_f16(spec: &Specialization) -> bool {
    spec.dtype == Dtype::F16
        || matches!(
            spec.op,
            Op::Fused {
                cache: Dtype::F16,
                ..
            }
        )
}

#[test]
fn every_variant_validates_and_translates() {
    let all = Specialization::all();
    assert!(all.len() > 200, "{}", all.len());
    for spec in &all {
        let (module, info) = compile_variant(spec);
        // GLSL has no 16-bit floats (the GL backend reports no SHADER_F16); f16 variants
        // are refused there before any shader is built (tests/errors.rs).
        let glsl = !uses_f16(spec) && !uses_subgroups(spec);
        translate(&module, &info, glsl, &format!("{spec:?}"));
    }
}

#[test]
fn the_position_grid_shader_validates_and_translates() {
    let (module, info) = compile(
        include_str!("../shaders/position_grid.wgsl"),
        &[],
        "position_grid.wgsl",
    );
    translate(&module, &info, true, "position_grid.wgsl");
    // Integer sums and one product; `max` keeps a divisor non-zero: nothing else.
    assert_eq!(math_functions(&module), vec![M::Max]);
}

#[test]
fn the_identity_shader_validates_and_translates() {
    let (module, info) = identity();
    translate(&module, &info, true, "identity.wgsl");
    // It moves bytes and nothing else.
    assert_eq!(math_functions(&module), vec![]);
}

#[test]
fn no_builtin_sine_or_cosine_anywhere() {
    // In naga IR the built-ins are MathFunction::Sin / Cos (and their hyperbolic and
    // inverse forms); none may appear in any variant.
    for spec in Specialization::all() {
        let (module, _) = compile_variant(&spec);
        for fun in math_functions(&module) {
            assert!(
                !matches!(
                    fun,
                    M::Sin
                        | M::Cos
                        | M::Tan
                        | M::Sinh
                        | M::Cosh
                        | M::Asin
                        | M::Acos
                        | M::Atan
                        | M::Atan2
                        | M::Pow
                        | M::Exp
                        | M::Exp2
                ),
                "{spec:?} uses the built-in {fun:?}"
            );
        }
    }
}

/// Every `fn NAME(` in the files under `shaders/`.
fn defined_in_files() -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut dirs = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/shaders"
    ))];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("shaders/") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "wgsl") {
                let text = std::fs::read_to_string(&path).expect("wgsl");
                for rest in text.split("fn ").skip(1) {
                    if let Some(name) = rest.split('(').next() {
                        names.insert(name.trim().to_string());
                    }
                }
            }
        }
    }
    names
}

#[test]
fn every_function_of_every_variant_is_defined_by_name_in_a_shader_file() {
    // The assembled source is only files joined: no function is made by text substitution,
    // so reading a kernel means reading files, and grep finds every function it calls.
    let defined = defined_in_files();
    for spec in Specialization::all() {
        let module = naga::front::wgsl::parse_str(&spec.naga_source()).expect("wgsl");
        for (_, f) in module.functions.iter() {
            let name = f.name.as_deref().unwrap_or("");
            assert!(
                defined.contains(name),
                "{spec:?}: function {name} is not defined by that name under shaders/"
            );
        }
    }
}

#[test]
fn each_variant_gets_the_source_composed_for_its_defines() {
    // build.rs composes one source per (kernel, pair layout, width, dtype) and names its
    // defines on the first line; the lookup must pick that one for every variant.
    for spec in Specialization::all() {
        let mut defines = format!(
            "{:?} {:?} {:?} {:?}",
            spec.kernel(),
            spec.pair_layout,
            spec.width,
            spec.dtype
        )
        .to_lowercase();
        if let Op::Fused {
            cache, subgroups, ..
        } = spec.op
        {
            defines += &format!(" cache_{cache:?}").to_lowercase();
            defines += if subgroups { " subgroups" } else { " barrier" };
        }
        let first = spec.source().lines().next().unwrap_or("");
        assert_eq!(first, format!("// wgpu-posenc {defines}"), "{spec:?}");
        // The dtype's storage is what is bound: f16 needs the extension, the others not.
        assert_eq!(
            spec.source().contains("enable f16;"),
            uses_f16(&spec),
            "{spec:?}"
        );
        assert_eq!(
            spec.source().contains("enable subgroups;"),
            uses_subgroups(&spec),
            "{spec:?}"
        );
    }
}
