//! Two interleaved spirals, classified by a 2-64-64-2 tanh network trained with
//! cross-entropy and Adam: the dataset is generated here (fixed seed, no download),
//! one progress line is printed per epoch, and training ends above 95% accuracy.
//!
//! Written to the output directory (default `target/spirals/`, or the first
//! argument): `loss.svg` (loss and accuracy per epoch), `graph.dot` (the graph
//! recorded by one training step: ops, shapes, bytes saved for backward),
//! `graph.svg` when Graphviz's `dot` is installed, and `spirals.svg` (the data over
//! the learned decision regions), and `weights.safetensors` (the trained weights,
//! which the example reloads into a fresh model and checks it classifies alike).
//!
//! Run with `cargo run --release --example spirals`.

use autograd::ComputationGraph;
use autograd::optim::{Adam, Optimizer};
use autograd::prelude::*;
use std::f64::consts::PI;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const POINTS_PER_CLASS: usize = 500;
const TURNS: f64 = 1.5;
const NOISE: f64 = 0.015;
const HIDDEN: usize = 64;
const EPOCHS: usize = 100;
const BATCH: usize = 50;
const LEARNING_RATE: f64 = 0.01;
const TARGET_ACCURACY: f64 = 0.95;

/// Points `[n, 2]` on two spirals, one per class, and their labels `[n]` (`i64`, 0 or 1).
fn two_spirals(rng: &mut Rng) -> Result<(Tensor, Tensor)> {
    let mut points = Vec::with_capacity(4 * POINTS_PER_CLASS);
    let mut labels = Vec::with_capacity(2 * POINTS_PER_CLASS);
    for class in 0..2 {
        for i in 0..POINTS_PER_CLASS {
            let t = i as f64 / POINTS_PER_CLASS as f64;
            let radius = 0.05 + 0.95 * t;
            let angle = 2.0 * PI * TURNS * t + PI * class as f64;
            points.push((radius * angle.cos() + NOISE * rng.normal_f64()) as f32);
            points.push((radius * angle.sin() + NOISE * rng.normal_f64()) as f32);
            labels.push(class as i64);
        }
    }
    let n = labels.len();
    Ok((
        Tensor::from_vec(points, [n, 2])?,
        Tensor::from_vec(labels, [n])?,
    ))
}

/// A multi-layer perceptron: `tanh(x W1 + b1) -> tanh(. W2 + b2) -> . W3 + b3`.
struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
    w3: Tensor,
    b3: Tensor,
}

impl Mlp {
    fn new(rng: &mut Rng) -> Result<Mlp> {
        // Weights ~ N(0, 1/fan_in), biases 0.
        let mut weight = |fan_in: usize, fan_out: usize| -> Result<Tensor> {
            Ok(rng
                .normal(
                    [fan_in, fan_out],
                    0.0,
                    (1.0 / fan_in as f64).sqrt(),
                    DType::F32,
                )?
                .with_requires_grad(true))
        };
        let (w1, w2, w3) = (
            weight(2, HIDDEN)?,
            weight(HIDDEN, HIDDEN)?,
            weight(HIDDEN, 2)?,
        );
        let bias = |n: usize| -> Result<Tensor> {
            Ok(Tensor::zeros([n], DType::F32)?.with_requires_grad(true))
        };
        Ok(Mlp {
            w1,
            b1: bias(HIDDEN)?,
            w2,
            b2: bias(HIDDEN)?,
            w3,
            b3: bias(2)?,
        })
    }

    /// Class scores `[n, 2]` for points `[n, 2]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = (x.matmul(&self.w1)? + &self.b1)?.tanh()?;
        let h = (h.matmul(&self.w2)? + &self.b2)?.tanh()?;
        h.matmul(&self.w3)? + &self.b3
    }

    fn params_mut(&mut self) -> [&mut Tensor; 6] {
        [
            &mut self.w1,
            &mut self.b1,
            &mut self.w2,
            &mut self.b2,
            &mut self.w3,
            &mut self.b3,
        ]
    }

    fn named(&self) -> [(&'static str, &Tensor); 6] {
        [
            ("W1", &self.w1),
            ("b1", &self.b1),
            ("W2", &self.w2),
            ("b2", &self.b2),
            ("W3", &self.w3),
            ("b3", &self.b3),
        ]
    }

    /// Predicted class of each point, without recording anything.
    fn predict(&self, x: &Tensor) -> Result<Vec<usize>> {
        let scores = no_grad(|| self.forward(x))?.to_vec::<f32>()?;
        Ok(scores
            .chunks_exact(2)
            .map(|s| usize::from(s[1] > s[0]))
            .collect())
    }
}

fn accuracy(model: &Mlp, x: &Tensor, labels: &[i64]) -> Result<f64> {
    let predicted = model.predict(x)?;
    let correct = predicted
        .iter()
        .zip(labels)
        .filter(|(p, l)| **p as i64 == **l)
        .count();
    Ok(correct as f64 / labels.len() as f64)
}

/// Constant for the first 70% of the epochs, then a cosine decay to a tenth: the
/// accuracy settles instead of jittering with the last mini-batches.
fn learning_rate(epoch: usize) -> f64 {
    let progress = (epoch - 1) as f64 / (EPOCHS - 1) as f64;
    let decay = ((progress - 0.7) / 0.3).clamp(0.0, 1.0);
    LEARNING_RATE * (0.1 + 0.45 * (1.0 + (PI * decay).cos()))
}

/// A random permutation of `0..n` (Fisher-Yates).
fn shuffled(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

fn main() -> Result<()> {
    autograd::init()?;
    let out_dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(default_out_dir);
    std::fs::create_dir_all(&out_dir).map_err(|e| io_error(&out_dir, e))?;

    let start = Instant::now();
    let mut rng = Rng::new(2024);
    let (x, y) = two_spirals(&mut rng)?;
    let labels = y.to_vec::<i64>()?;
    let n = labels.len();
    let mut model = Mlp::new(&mut rng)?;
    let mut opt = Adam::new(LEARNING_RATE);
    println!(
        "two spirals: {n} points, {TURNS} turns; MLP 2-{HIDDEN}-{HIDDEN}-2 (tanh), \
         Adam lr {LEARNING_RATE} (cosine decay over the last 30%), batches of {BATCH}"
    );

    let mut graph_dot = None;
    let mut history = Vec::with_capacity(EPOCHS);
    for epoch in 1..=EPOCHS {
        opt.set_learning_rate(learning_rate(epoch));
        let order = shuffled(n, &mut rng);
        let mut loss_sum = 0.0;
        let mut batches = 0;
        for chunk in order.chunks(BATCH) {
            let index: Vec<i64> = chunk.iter().map(|&i| i as i64).collect();
            let index = Tensor::from_vec(index, [chunk.len()])?;
            let xb = x.index_select(&index, 0)?;
            let yb = y.index_select(&index, 0)?;

            let loss = model.forward(&xb)?.cross_entropy(&yb)?;
            if graph_dot.is_none() {
                // The graph of one step, before backward releases what it saved.
                let mut names = model.named().to_vec();
                names.push(("loss", &loss));
                graph_dot = Some(ComputationGraph::of(&[&loss]).to_dot_labeled(&names));
            }
            loss.backward()?;
            opt.step(&mut model.params_mut())?;
            opt.zero_grad(&mut model.params_mut());
            loss_sum += loss.to_scalar::<f32>()? as f64;
            batches += 1;
        }
        let loss = loss_sum / batches as f64;
        let acc = accuracy(&model, &x, &labels)?;
        history.push((loss, acc));
        println!("epoch {epoch:3} loss {loss:.4} acc {:.1}%", 100.0 * acc);
    }
    let elapsed = start.elapsed();
    let (_, final_acc) = history.last().copied().unwrap_or((f64::NAN, 0.0));

    write(&out_dir.join("loss.svg"), &loss_svg(&history))?;
    write(
        &out_dir.join("spirals.svg"),
        &regions_svg(&model, &x, &labels)?,
    )?;
    let dot_path = out_dir.join("graph.dot");
    write(
        &dot_path,
        graph_dot.as_deref().unwrap_or("digraph autograd {}\n"),
    )?;
    let rendered = render_with_graphviz(&dot_path, &out_dir.join("graph.svg"));

    // The trained weights, saved as safetensors, loaded into a freshly initialised
    // model: it classifies every point as the trained one does.
    let weights = out_dir.join("weights.safetensors");
    autograd::save(&weights, &model.named())?;
    let mut reloaded = Mlp::new(&mut Rng::new(7))?;
    let names = model.named().map(|(name, _)| name);
    let mut targets: Vec<(&str, &mut Tensor)> =
        names.into_iter().zip(reloaded.params_mut()).collect();
    autograd::load_into(&weights, &mut targets)?;
    let reloaded_acc = accuracy(&reloaded, &x, &labels)?;
    if model.predict(&x)? != reloaded.predict(&x)? {
        return Err(Error::InvalidArgument {
            op: "spirals example",
            msg: format!("the reloaded weights classify differently ({reloaded_acc})"),
        });
    }

    println!(
        "trained in {:.2} s: training accuracy {:.1}%",
        elapsed.as_secs_f64(),
        100.0 * final_acc
    );
    println!(
        "weights saved to weights.safetensors and reloaded into a fresh model: accuracy {:.1}%",
        100.0 * reloaded_acc
    );
    println!(
        "wrote loss.svg, spirals.svg, graph.dot{rendered}, weights.safetensors to {}",
        out_dir.display()
    );
    if final_acc <= TARGET_ACCURACY {
        return Err(Error::InvalidArgument {
            op: "spirals example",
            msg: format!(
                "training accuracy {:.1}% did not exceed {:.0}%",
                100.0 * final_acc,
                100.0 * TARGET_ACCURACY
            ),
        });
    }
    Ok(())
}

/// `$CARGO_TARGET_DIR/spirals`, or `target/spirals` in the workspace.
fn default_out_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("spirals")
}

/// Renders `dot` to SVG when Graphviz is installed; its absence is not an error.
fn render_with_graphviz(dot: &Path, svg: &Path) -> &'static str {
    match Command::new("dot")
        .arg("-Tsvg")
        .arg(dot)
        .arg("-o")
        .arg(svg)
        .status()
    {
        Ok(status) if status.success() => ", graph.svg",
        Ok(status) => {
            eprintln!("note: `dot -Tsvg` failed ({status}); graph.dot is still there");
            ""
        }
        Err(_) => {
            println!(
                "Graphviz `dot` is not installed; render the graph with `dot -Tsvg {} -o graph.svg`",
                dot.display()
            );
            ""
        }
    }
}

fn write(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).map_err(|e| io_error(path, e))
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::InvalidArgument {
        op: "spirals example",
        msg: format!("cannot write {}: {e}", path.display()),
    }
}

/// Loss (left axis) and accuracy (right axis, 0-100%) per epoch as an SVG chart.
fn loss_svg(history: &[(f64, f64)]) -> String {
    let (w, h) = (640.0, 360.0);
    let (left, right, top, bottom) = (60.0, 60.0, 30.0, 45.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let max_loss = history
        .iter()
        .map(|&(l, _)| l)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let epochs = history.len().max(2) as f64;
    let px = |i: usize| left + pw * i as f64 / (epochs - 1.0);
    let py = |frac: f64| top + ph * (1.0 - frac);
    let polyline = |values: &mut dyn Iterator<Item = f64>| -> String {
        values
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", px(i), py(v)))
            .collect::<Vec<_>>()
            .join(" ")
    };

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="18" text-anchor="middle" font-size="14">Two spirals: training loss and accuracy per epoch</text>"#,
        w / 2.0
    );
    for k in 0..=4 {
        let frac = k as f64 / 4.0;
        let y = py(frac);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e5e5e5"/>"##,
            left + pw
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#1f5fbf">{:.2}</text>"##,
            left - 6.0,
            y + 4.0,
            max_loss * frac
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" fill="#c0392b">{:.0}%</text>"##,
            left + pw + 6.0,
            y + 4.0,
            100.0 * frac
        );
    }
    for k in 0..=5 {
        let i = ((epochs - 1.0) * k as f64 / 5.0).round() as usize;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            px(i),
            top + ph + 16.0,
            i + 1
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">epoch</text>"#,
        left + pw / 2.0,
        h - 8.0
    );
    let _ = writeln!(
        s,
        r#"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
    );
    let loss_points = polyline(&mut history.iter().map(|&(l, _)| l / max_loss));
    let acc_points = polyline(&mut history.iter().map(|&(_, a)| a));
    let _ = writeln!(
        s,
        r##"<polyline points="{loss_points}" fill="none" stroke="#1f5fbf" stroke-width="2"/>"##
    );
    let _ = writeln!(
        s,
        r##"<polyline points="{acc_points}" fill="none" stroke="#c0392b" stroke-width="2" stroke-dasharray="6 3"/>"##
    );
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" fill="#1f5fbf">— loss (cross-entropy)</text>"##,
        left + pw - 170.0,
        top + 0.45 * ph
    );
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" fill="#c0392b">- - accuracy</text>"##,
        left + pw - 170.0,
        top + 0.45 * ph + 16.0
    );
    s.push_str("</svg>\n");
    s
}

/// The data points over the classes the model predicts on a grid.
fn regions_svg(model: &Mlp, x: &Tensor, labels: &[i64]) -> Result<String> {
    const GRID: usize = 80;
    const SIZE: f64 = 480.0;
    const EXTENT: f64 = 1.15;
    let cell = SIZE / GRID as f64;
    let to_px = |v: f64| (v + EXTENT) / (2.0 * EXTENT) * SIZE;

    let mut grid = Vec::with_capacity(2 * GRID * GRID);
    for row in 0..GRID {
        for col in 0..GRID {
            let gx = -EXTENT + 2.0 * EXTENT * (col as f64 + 0.5) / GRID as f64;
            let gy = EXTENT - 2.0 * EXTENT * (row as f64 + 0.5) / GRID as f64;
            grid.extend([gx as f32, gy as f32]);
        }
    }
    let classes = model.predict(&Tensor::from_vec(grid, [GRID * GRID, 2])?)?;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{SIZE}" height="{SIZE}" viewBox="0 0 {SIZE} {SIZE}">"#
    );
    const REGION: [&str; 2] = ["#dbe8fb", "#fbdcd8"];
    const POINT: [&str; 2] = ["#1f5fbf", "#c0392b"];
    // One rectangle per run of equal predictions along a row.
    for (row, predictions) in classes.chunks_exact(GRID).enumerate() {
        let mut start = 0;
        for col in 1..=GRID {
            if col == GRID || predictions[col] != predictions[start] {
                let _ = writeln!(
                    s,
                    r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{}"/>"#,
                    start as f64 * cell,
                    row as f64 * cell,
                    (col - start) as f64 * cell + 0.3,
                    cell + 0.3,
                    REGION[predictions[start]]
                );
                start = col;
            }
        }
    }
    let points = x.to_vec::<f32>()?;
    for (p, label) in points.chunks_exact(2).zip(labels) {
        let _ = writeln!(
            s,
            r#"<circle cx="{:.1}" cy="{:.1}" r="2.2" fill="{}"/>"#,
            to_px(p[0] as f64),
            SIZE - to_px(p[1] as f64),
            POINT[usize::from(*label > 0)]
        );
    }
    s.push_str("</svg>\n");
    Ok(s)
}
