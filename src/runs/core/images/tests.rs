use base64::engine::general_purpose::STANDARD;

use super::*;

/// The signature of a PNG file, then `extra`.
fn png_bytes(extra: &[u8]) -> Vec<u8> {
    [b"\x89PNG\r\n\x1a\n".as_slice(), extra].concat()
}

fn data_url(mime: &str, bytes: &[u8]) -> String {
    format!("data:{mime};base64,{}", STANDARD.encode(bytes))
}

fn check_one(url: &str) -> Result<QueryImage, RunError> {
    check_images(vec![url.to_string()]).map(|mut v| v.remove(0))
}

#[test]
fn images_are_checked_by_type_size_and_count() {
    let png = data_url("image/png", &png_bytes(b"IHDR"));
    match check_one(&png).unwrap() {
        QueryImage::Data { mime, bytes, .. } => {
            assert_eq!((mime, bytes), ("image/png", png_bytes(b"IHDR")))
        }
        other => panic!("{other:?}"),
    }
    let remote = "https://example.com/a.png".to_string();
    assert_eq!(check_one(&remote).unwrap(), QueryImage::Remote(remote));
    let big = format!(
        "data:image/gif;base64,{}",
        "A".repeat((MAX_IMAGE_BYTES + 10) / 3 * 4)
    );
    for bad in [
        "data:image/svg+xml;base64,PHN2Zz4=".to_string(),
        "data:image/png,raw".to_string(),
        "data:image/png;base64,!!!".to_string(),
        "ftp://x/a.png".to_string(),
        big,
    ] {
        assert!(check_one(&bad).is_err(), "{}", &bad[..30.min(bad.len())]);
    }
    assert!(check_images(vec![png; MAX_IMAGES + 1]).is_err());
}

#[test]
fn image_bytes_must_be_of_their_declared_type() {
    let html = b"<!doctype html><html><body>hi</body></html>";
    let jpeg = [0xFF, 0xD8, 0xFF, 0xE0, 0, 16];
    let webp = b"RIFF\x10\0\0\0WEBPVP8 ";
    for (mime, bytes) in [
        ("image/png", png_bytes(b"")),
        ("image/jpeg", jpeg.to_vec()),
        ("image/gif", b"GIF89a\x01\0".to_vec()),
        ("image/gif", b"GIF87a\x01\0".to_vec()),
        ("image/webp", webp.to_vec()),
    ] {
        assert!(check_one(&data_url(mime, &bytes)).is_ok(), "{mime}");
    }
    for (mime, bytes) in [
        ("image/png", html.to_vec()),
        ("image/png", Vec::new()),
        ("image/png", jpeg.to_vec()),
        ("image/jpeg", png_bytes(b"")),
        ("image/gif", b"GIF8".to_vec()),
        ("image/webp", b"RIFF\x10\0\0\0WAVE".to_vec()),
    ] {
        let err = check_one(&data_url(mime, &bytes)).unwrap_err().to_string();
        assert!(
            err.contains("images[0]: the data is not a"),
            "{mime}: {err}"
        );
    }
}

#[test]
fn image_urls_with_control_characters_or_no_host_are_refused() {
    let png = data_url("image/png", &png_bytes(b""));
    for bad in [
        "https://example.com/a\0.png".to_string(),
        "https://example.com/a\n.png".to_string(),
        format!("{png}\0"),
        "https://".to_string(),
        "http://exa mple.com/a.png".to_string(),
        format!("https://example.com/{}", "a".repeat(MAX_IMAGE_URL_BYTES)),
    ] {
        let err = check_one(&bad).unwrap_err().to_string();
        assert!(err.starts_with("images[0]: "), "{err}");
    }
}

#[test]
fn a_query_over_the_run_allowance_is_refused_naming_the_setting() {
    let image = |n: usize| data_url("image/png", &png_bytes(&vec![7; n]));
    let images = check_images(vec![image(1000), image(1000), "https://e.x/a.png".into()]).unwrap();
    assert_eq!(image_bytes(&images), 2 * 1008);
    assert!(check_allowance(&images, 2016).is_ok());
    let err = check_allowance(&images, 2015).unwrap_err().to_string();
    assert!(err.contains("server.max_run_image_bytes"), "{err}");
}
