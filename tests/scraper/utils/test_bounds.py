from scraper.utils.bounds import element_count, elements_over


def test_elements_over_is_the_bound_only_above_the_limit() -> None:
    # 6 "<", of which 2 end tags and 1 comment: a bound of 3 elements
    body = b"<!-- c --><p>a</p><p>b</p><br>"
    assert element_count(body) == 3
    assert elements_over(body, 3) is None
    assert elements_over(body, 5) is None  # more "<" than the limit, the bound is not
    assert elements_over(body, 2) == 3
    assert elements_over(b"", 0) is None
