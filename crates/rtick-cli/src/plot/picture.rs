//! Any picture drawn in memory as PNG (through the embedded font's glyphs)
//! or SVG, on a white ground.

use anyhow::{anyhow, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{font, glyphs, Format, FONT};

/// What a picture draws, on any backend.
pub(crate) trait Picture {
    /// Its size in pixels.
    fn size(&self) -> (u32, u32);
    /// Draws it on `root` (filled white).
    fn render<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB::ErrorType: 'static;
}

/// Draws `picture` in memory, as the bytes of a `format` file.
pub(super) fn encode(format: Format, picture: &impl Picture) -> Result<Vec<u8>> {
    font();
    let size = picture.size();
    match format {
        Format::Png => {
            let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
            {
                let bitmap = BitMapBackend::with_buffer(&mut rgb, size);
                let root = glyphs::Glyphs::new(bitmap, FONT)?.into_drawing_area();
                root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
                picture.render(&root)?;
                root.present().map_err(|e| anyhow!("drawing the plot: {e}"))?;
            }
            let mut png = Vec::new();
            let mut enc = png::Encoder::new(&mut png, size.0, size.1);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            let mut w = enc.write_header().context("encoding the PNG")?;
            w.write_image_data(&rgb).context("encoding the PNG")?;
            w.finish().context("encoding the PNG")?;
            Ok(png)
        }
        Format::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
                root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
                picture.render(&root)?;
                root.present().map_err(|e| anyhow!("drawing the plot: {e}"))?;
            }
            Ok(svg.into_bytes())
        }
    }
}
