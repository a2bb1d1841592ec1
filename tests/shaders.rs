//! Every shader variant passes naga validation and translates to SPIR-V (Vulkan), MSL
//! (Metal), HLSL (DX12) and GLSL (GL), so the backends this machine lacks are compiled too.
//! Also: the WGSL built-in sine and cosine appear nowhere (the accuracy contract).

use naga::back::PipelineConstants;
use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};
use wgpu_posenc::Dtype;
use wgpu_posenc::kernels::Specialization;

fn validate(module: &naga::Module) -> ModuleInfo {
    Validator::new(ValidationFlags::all(), Capabilities::all())
        .validate(module)
        .unwrap_or_else(|e| panic!("{}", e.emit_to_string("")))
}

/// Parses, validates and applies the override constants of one variant.
fn compile(spec: &Specialization) -> (naga::Module, ModuleInfo) {
    let source = spec.source();
    let module = naga::front::wgsl::parse_str(&source)
        .unwrap_or_else(|e| panic!("{spec:?}: {}", e.emit_to_string(&source)));
    let info = validate(&module);
    let mut constants = PipelineConstants::default();
    for (name, value) in spec.constants() {
        constants.insert(name.to_string(), value);
    }
    let entry = Some((naga::ShaderStage::Compute, "main"));
    let (module, info) =
        naga::back::pipeline_constants::process_overrides(&module, &info, entry, &constants)
            .unwrap_or_else(|e| panic!("{spec:?}: overrides: {e}"));
    (module.into_owned(), info.into_owned())
}

#[test]
fn every_variant_validates_and_translates() {
    let all = Specialization::all();
    assert!(all.len() > 200, "{}", all.len());
    for spec in &all {
        let (module, info) = compile(spec);

        let spv = naga::back::spv::write_vec(&module, &info, &Default::default(), None)
            .unwrap_or_else(|e| panic!("{spec:?}: SPIR-V: {e}"));
        assert_eq!(spv[0], 0x0723_0203, "SPIR-V magic");

        let msl_pipeline = naga::back::msl::PipelineOptions {
            entry_point: Some((naga::ShaderStage::Compute, "main".into())),
            ..Default::default()
        };
        let msl_options = naga::back::msl::Options {
            lang_version: (2, 1),
            ..Default::default()
        };
        let (msl, _) = naga::back::msl::write_string(&module, &info, &msl_options, &msl_pipeline)
            .unwrap_or_else(|e| panic!("{spec:?}: MSL: {e}"));
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
            .write(&module, &info, None)
            .unwrap_or_else(|e| panic!("{spec:?}: HLSL: {e}"));
        assert!(hlsl.contains("[numthreads(64, 1, 1)]"));

        // GLSL has no 16-bit floats (the GL backend reports no SHADER_F16); f16 variants
        // are refused there before any shader is built (tests/errors.rs).
        if spec.dtype == Dtype::F32 {
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
                &module,
                &info,
                &glsl_options,
                &glsl_pipeline,
                naga::proc::BoundsCheckPolicies::default(),
            )
            .and_then(|mut w| w.write())
            .unwrap_or_else(|e| panic!("{spec:?}: GLSL: {e}"));
            assert!(glsl.contains("layout(local_size_x = 64"));
        }
    }
}

#[test]
fn no_builtin_sine_or_cosine_anywhere() {
    // In naga IR the built-ins are MathFunction::Sin / Cos (and their hyperbolic and
    // inverse forms); none may appear in any variant.
    use naga::{Expression, MathFunction as M};
    for spec in Specialization::all() {
        let (module, _) = compile(&spec);
        let functions = module
            .functions
            .iter()
            .map(|(_, f)| f)
            .chain(module.entry_points.iter().map(|e| &e.function));
        for function in functions {
            for (_, expr) in function.expressions.iter() {
                if let Expression::Math { fun, .. } = expr {
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
    }
}
